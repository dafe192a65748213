"""Payout returns, each on the day it happened

A payout's notification lists its returns (``refunds[]``), and the payout's row kept only
their sum. The day a return happened was lost: a payout returned days later was counted
as returned on the payout's own day (whose answer then changed when re-run) and on no day
its statement credit was booked. Each return is now a row of its own, read by the day it
happened (``returned_at``).

Payouts stored before this revision have no return rows; the engine keeps judging those by
the sum on the payout's row, as before.

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "payout_return",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("rank", sa.BigInteger(), nullable=False),
        sa.Column("inbox_item_id", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("payout_key", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("ref", sqlmodel.sql.sqltypes.AutoString(length=120), nullable=False),
        sa.Column("end_to_end_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True),
        sa.Column("amount_cents", sa.BigInteger(), nullable=True),
        sa.Column("returned_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["inbox_item_id"], ["inbox_item.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("ref", name="uq_payout_return"),
    )
    op.create_index("ix_payout_return_inbox_item_id", "payout_return", ["inbox_item_id"])
    op.create_index("ix_payout_return_payout_key", "payout_return", ["payout_key"])
    op.create_index("ix_payout_return_returned_at", "payout_return", ["returned_at"])


def downgrade() -> None:
    op.drop_index("ix_payout_return_returned_at", table_name="payout_return")
    op.drop_index("ix_payout_return_payout_key", table_name="payout_return")
    op.drop_index("ix_payout_return_inbox_item_id", table_name="payout_return")
    op.drop_table("payout_return")
