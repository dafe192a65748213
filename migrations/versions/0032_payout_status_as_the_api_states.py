"""A payout's status as the provider's API states it, beside a notification it contradicts

A payout's notifications are one row per (type, reference), and an outcome ranks alike
whatever it is: a notification saying CANCELED replaced the LIQUIDATED the API had
confirmed, the look-up found the API contradicting it (``status_mismatch``) and kept
nothing of what the API said, and the money the API stands behind stopped counting.
``account_movement.confirmed_status`` keeps the status the API states of a payout whose
notified one it contradicts: the payout counts as that, and the notification stays the
day's exception. Rows stored before this revision have none and read as before.

Revision ID: 0032
Revises: 0031
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0032"
down_revision: str | None = "0031"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "account_movement", sa.Column("confirmed_status", sa.String(length=32), nullable=True)
    )


def downgrade() -> None:
    with op.batch_alter_table("account_movement") as batch:
        batch.drop_column("confirmed_status")
