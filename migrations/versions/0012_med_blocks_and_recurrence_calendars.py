"""MED blocks and deadlines; recurrence calendars

A MED case reports the money the provider blocked and the day its analysis must end; a
Pix Automático recurrence keeps its calendar (first day, last day, periodicity) and its
fixed amount, so a cycle with no recurring charge can be noticed.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("infraction", schema=None) as batch_op:
        batch_op.add_column(sa.Column("blocked_cents", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("opened_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("deadline_at", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("recurrence", schema=None) as batch_op:
        batch_op.add_column(sa.Column("start_date", sa.Date(), nullable=True))
        batch_op.add_column(sa.Column("end_date", sa.Date(), nullable=True))
        batch_op.add_column(sa.Column("periodicity", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("amount_cents", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("recurrence", schema=None) as batch_op:
        batch_op.drop_column("amount_cents")
        batch_op.drop_column("periodicity")
        batch_op.drop_column("end_date")
        batch_op.drop_column("start_date")
    with op.batch_alter_table("infraction", schema=None) as batch_op:
        batch_op.drop_column("deadline_at")
        batch_op.drop_column("opened_at")
        batch_op.drop_column("blocked_cents")
