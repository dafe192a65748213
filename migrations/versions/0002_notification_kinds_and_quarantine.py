"""notification kinds and quarantine

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "quarantined_delivery",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("route", sa.String(length=200), nullable=False),
        sa.Column("remote_addr", sa.String(length=64), nullable=True),
        sa.Column("status_code", sa.Integer(), nullable=False),
        sa.Column("reason", sa.String(length=64), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("headers", sa.Text(), nullable=False),
        sa.Column("body_size", sa.Integer(), nullable=True),
        sa.Column("body", sa.LargeBinary(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("quarantined_delivery", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_quarantined_delivery_received_at"), ["received_at"], unique=False
        )

    op.create_table(
        "account_movement",
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("reference", sa.String(length=100), nullable=False),
        sa.Column("movement_id", sa.String(length=100), nullable=True),
        sa.Column("idempotency_key", sa.String(length=100), nullable=True),
        sa.Column("end_to_end_id", sa.String(length=64), nullable=True),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("error_code", sa.String(length=32), nullable=True),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("amount_cents", sa.BigInteger(), nullable=True),
        sa.Column("refunded_cents", sa.BigInteger(), nullable=False),
        sa.Column("credit_debit_type", sa.String(length=16), nullable=True),
        sa.Column("txid", sa.String(length=35), nullable=True),
        sa.Column("provider_created_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("rank", sa.BigInteger(), nullable=False),
        sa.Column("inbox_item_id", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["inbox_item_id"],
            ["inbox_item.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("type", "reference", name="uq_account_movement"),
    )
    with op.batch_alter_table("account_movement", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_account_movement_end_to_end_id"), ["end_to_end_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_account_movement_idempotency_key"), ["idempotency_key"], unique=False
        )

    op.create_table(
        "infraction",
        sa.Column("infraction_id", sa.String(length=100), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("amount_cents", sa.BigInteger(), nullable=True),
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("rank", sa.BigInteger(), nullable=False),
        sa.Column("inbox_item_id", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["inbox_item_id"],
            ["inbox_item.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("infraction_id", name="uq_infraction"),
    )
    op.create_table(
        "pix_refund",
        sa.Column("end_to_end_id", sa.String(length=32), nullable=False),
        sa.Column("refund_id", sa.String(length=35), nullable=False),
        sa.Column("rtr_id", sa.String(length=32), nullable=True),
        sa.Column("amount_cents", sa.BigInteger(), nullable=False),
        sa.Column("natureza", sa.String(length=32), nullable=True),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("motivo", sa.Text(), nullable=True),
        sa.Column("requested_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("settled_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("rank", sa.BigInteger(), nullable=False),
        sa.Column("inbox_item_id", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["inbox_item_id"],
            ["inbox_item.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("end_to_end_id", "refund_id", name="uq_pix_refund"),
    )
    with op.batch_alter_table("pix_refund", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_pix_refund_rtr_id"), ["rtr_id"], unique=False)

    op.create_table(
        "recurrence",
        sa.Column("id_rec", sa.String(length=35), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("status_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("rank", sa.BigInteger(), nullable=False),
        sa.Column("inbox_item_id", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["inbox_item_id"],
            ["inbox_item.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("id_rec", name="uq_recurrence"),
    )
    op.create_table(
        "recurring_charge",
        sa.Column("txid", sa.String(length=35), nullable=False),
        sa.Column("id_rec", sa.String(length=35), nullable=True),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_attempt_status", sa.String(length=32), nullable=True),
        sa.Column("last_attempt_end_to_end_id", sa.String(length=32), nullable=True),
        sa.Column("status_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("rank", sa.BigInteger(), nullable=False),
        sa.Column("inbox_item_id", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["inbox_item_id"],
            ["inbox_item.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("txid", name="uq_recurring_charge"),
    )
    with op.batch_alter_table("recurring_charge", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_recurring_charge_id_rec"), ["id_rec"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("recurring_charge", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_recurring_charge_id_rec"))

    op.drop_table("recurring_charge")
    op.drop_table("recurrence")
    with op.batch_alter_table("pix_refund", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_pix_refund_rtr_id"))

    op.drop_table("pix_refund")
    op.drop_table("infraction")
    with op.batch_alter_table("account_movement", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_account_movement_idempotency_key"))
        batch_op.drop_index(batch_op.f("ix_account_movement_end_to_end_id"))

    op.drop_table("account_movement")
    with op.batch_alter_table("quarantined_delivery", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_quarantined_delivery_received_at"))

    op.drop_table("quarantined_delivery")
