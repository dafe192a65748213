"""When pixrecon first heard of a payout

A payout the provider sends no notification for while it is processing is first heard of
when its outcome comes: on a later day, for one created late in a day and settled the next
morning. Its own day, judged at its end, knew nothing of it; re-run once the outcome had
come, it judged the payout paid out and not debited, and a day that had been
``reconciled`` turned into a break. ``first_seen_at`` keeps when the first notification (or
poll) of each row was received: a payout first heard of after its day's date lag ended,
and not debited by then, is left to the day it was first heard of, which judges it whole.

Rows stored before this revision have none: they are judged as they stand, as before.

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "account_movement", sa.Column("first_seen_at", sa.DateTime(timezone=True), nullable=True)
    )


def downgrade() -> None:
    with op.batch_alter_table("account_movement") as batch:
        batch.drop_column("first_seen_at")
