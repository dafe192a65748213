"""statement, balances, confirmation of account movements

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "balance_snapshot",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("taken_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("available_cents", sa.BigInteger(), nullable=False),
        sa.Column("inbox_item_id", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["inbox_item_id"],
            ["inbox_item.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("taken_at", name="uq_balance_snapshot"),
    )
    op.create_table(
        "statement_entry",
        sa.Column("entry_id", sa.String(length=100), nullable=False),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("category", sa.String(length=40), nullable=True),
        sa.Column("amount_cents", sa.BigInteger(), nullable=False),
        sa.Column("balance_after_cents", sa.BigInteger(), nullable=True),
        sa.Column("end_to_end_id", sa.String(length=64), nullable=True),
        sa.Column("original_end_to_end_id", sa.String(length=64), nullable=True),
        sa.Column("idempotency_key", sa.String(length=100), nullable=True),
        sa.Column("txid", sa.String(length=35), nullable=True),
        sa.Column("infraction_id", sa.String(length=100), nullable=True),
        sa.Column("booked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("inbox_item_id", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["inbox_item_id"],
            ["inbox_item.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("entry_id", name="uq_statement_entry"),
    )
    with op.batch_alter_table("statement_entry", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_statement_entry_booked_at"), ["booked_at"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_statement_entry_end_to_end_id"), ["end_to_end_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_statement_entry_idempotency_key"), ["idempotency_key"], unique=False
        )

    with op.batch_alter_table("account_movement", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "confirmation", sa.String(length=24), nullable=False, server_default="pending"
            )
        )
        batch_op.add_column(sa.Column("confirmed_amount_cents", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("confirmed_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("next_check_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(
            sa.Column("check_attempts", sa.Integer(), nullable=False, server_default="0")
        )
        batch_op.create_index(
            batch_op.f("ix_account_movement_confirmation"), ["confirmation"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("account_movement", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_account_movement_confirmation"))
        batch_op.drop_column("check_attempts")
        batch_op.drop_column("next_check_at")
        batch_op.drop_column("confirmed_at")
        batch_op.drop_column("confirmed_amount_cents")
        batch_op.drop_column("confirmation")

    with op.batch_alter_table("statement_entry", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_statement_entry_idempotency_key"))
        batch_op.drop_index(batch_op.f("ix_statement_entry_end_to_end_id"))
        batch_op.drop_index(batch_op.f("ix_statement_entry_booked_at"))

    op.drop_table("statement_entry")
    op.drop_table("balance_snapshot")
