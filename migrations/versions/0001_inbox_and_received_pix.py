"""inbox and received pix

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "webhook_delivery",
        sa.Column("route", sa.String(length=200), nullable=False),
        sa.Column("remote_addr", sa.String(length=64), nullable=True),
        sa.Column("headers", sa.Text(), nullable=False),
        sa.Column("item_count", sa.Integer(), nullable=False),
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "inbox_item",
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("kind", sa.String(length=40), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("delivery_id", sa.BigInteger(), nullable=True),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("webhook_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("poll_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("webhook_count", sa.Integer(), nullable=False),
        sa.Column("poll_count", sa.Integer(), nullable=False),
        sa.Column("dispatched_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("processed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["delivery_id"],
            ["webhook_delivery.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("key", name="uq_inbox_item_key"),
    )
    with op.batch_alter_table("inbox_item", schema=None) as batch_op:
        batch_op.create_index(
            "ix_inbox_item_status_received", ["status", "received_at"], unique=False
        )

    op.create_table(
        "pix_received",
        sa.Column("end_to_end_id", sa.String(length=32), nullable=False),
        sa.Column("txid", sa.String(length=35), nullable=True),
        sa.Column("amount_cents", sa.BigInteger(), nullable=False),
        sa.Column("horario", sa.DateTime(timezone=True), nullable=True),
        sa.Column("horario_raw", sa.String(length=64), nullable=True),
        sa.Column("chave", sa.String(length=77), nullable=True),
        sa.Column("info_pagador", sa.Text(), nullable=True),
        sa.Column("payer_document", sa.String(length=14), nullable=True),
        sa.Column("payer_name", sa.String(length=200), nullable=True),
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("inbox_item_id", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["inbox_item_id"],
            ["inbox_item.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("end_to_end_id", name="uq_pix_received_e2e"),
    )
    with op.batch_alter_table("pix_received", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_pix_received_horario"), ["horario"], unique=False)
        batch_op.create_index(batch_op.f("ix_pix_received_txid"), ["txid"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("pix_received", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_pix_received_txid"))
        batch_op.drop_index(batch_op.f("ix_pix_received_horario"))

    op.drop_table("pix_received")
    with op.batch_alter_table("inbox_item", schema=None) as batch_op:
        batch_op.drop_index("ix_inbox_item_status_received")

    op.drop_table("inbox_item")
    op.drop_table("webhook_delivery")
