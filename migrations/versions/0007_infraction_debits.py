"""infraction debits

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("infraction", schema=None) as batch_op:
        batch_op.add_column(sa.Column("end_to_end_id", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("debited_cents", sa.BigInteger(), nullable=True))
        batch_op.add_column(
            sa.Column("provider_updated_at", sa.DateTime(timezone=True), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("infraction", schema=None) as batch_op:
        batch_op.drop_column("provider_updated_at")
        batch_op.drop_column("debited_cents")
        batch_op.drop_column("end_to_end_id")
