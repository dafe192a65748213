"""When a payout's outcome came, and when it had been seen processing

A payout is judged on its own day as it stood at that day's end, and a notification says
no more than its state: a payout still processing at midnight and settled the next day was
judged, on a re-run of its day, as settled then, and its day turned from pending to a
break ("paid out, but the statement had not debited it"). For a payout stored as
processing whose outcome (paid out, rejected, canceled) is received later,
``outcome_seen_at`` keeps when that outcome was received and ``processing_seen_at`` when
the processing state had been: when the one came before the day's date lag ended and the
other after it, the day judges the payout still processing, and the day the outcome came
judges its money. Both are receipt times, so a day played or loaded later than it happened
(every state received after it) is judged as the states stand, as before.

Rows stored before this revision have neither: they are judged as they stand, as before.

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


COLUMNS = ("outcome_seen_at", "processing_seen_at")


def upgrade() -> None:
    for name in COLUMNS:
        op.add_column(
            "account_movement", sa.Column(name, sa.DateTime(timezone=True), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("account_movement") as batch:
        for name in COLUMNS:
            batch.drop_column(name)
