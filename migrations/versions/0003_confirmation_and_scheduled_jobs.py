"""confirmation and scheduled jobs

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "scheduled_job",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("owner", sa.String(length=64), nullable=True),
        sa.Column("leased_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_window_end", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_success_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("name"),
    )
    with op.batch_alter_table("pix_received", schema=None) as batch_op:
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
            batch_op.f("ix_pix_received_confirmation"), ["confirmation"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("pix_received", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_pix_received_confirmation"))
        batch_op.drop_column("check_attempts")
        batch_op.drop_column("next_check_at")
        batch_op.drop_column("confirmed_at")
        batch_op.drop_column("confirmed_amount_cents")
        batch_op.drop_column("confirmation")

    op.drop_table("scheduled_job")
