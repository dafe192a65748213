"""When a payout's or a refund's outcome came after it was seen in progress

A payout is judged on its own day as it stood at that day's end, and a notification says
no more than its state: a payout still processing at midnight and settled the next day was
judged, on a re-run of its day, as settled then, and its day turned from pending to a
break ("paid out, but the statement had not debited it"). ``outcome_seen_at`` keeps when
its outcome (paid out, rejected or canceled) was received for a payout already stored as
processing, so that its own day judges it still processing when that came after the day
was over, and the day its outcome arrived judges its debit.

A refund refused (``NAO_REALIZADO``) has no time of its own either: ``pix_refund`` keeps
the same for one stored in progress before, so the day it was asked on still shows it in
progress at its end.

Rows stored before this revision have none: they are judged as they stand, as before.

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


TABLES = ("account_movement", "pix_refund")


def upgrade() -> None:
    for table in TABLES:
        op.add_column(
            table, sa.Column("outcome_seen_at", sa.DateTime(timezone=True), nullable=True)
        )


def downgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("outcome_seen_at")
