"""refunds confirmed by the API

A refund notified by webhook moves money only once the provider's API stands behind it,
like every other movement: ``pix_refund`` gains the confirmation columns.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("pix_refund", schema=None) as batch_op:
        # Rows that exist already are looked up like new ones.
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
            batch_op.f("ix_pix_refund_confirmation"), ["confirmation"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("pix_refund", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_pix_refund_confirmation"))
        batch_op.drop_column("check_attempts")
        batch_op.drop_column("next_check_at")
        batch_op.drop_column("confirmed_at")
        batch_op.drop_column("confirmed_amount_cents")
        batch_op.drop_column("confirmation")
