"""Verdicts keep how many webhooks repeated their movement

The nightly report counts the webhooks that repeated a Pix or a refund of the day. It
read them by joining every movement verdict of the run to the inbox again: on a day of a
million Pix, half a second scanning the whole inbox. The matchers already read the inbox
item of each movement, so each verdict now keeps its repeats (``NULL`` when none) and the
report sums them in the scan it makes anyway.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Nullable, no default: PostgreSQL adds it without rewriting the table.
    op.add_column(
        "reconciliation_item", sa.Column("duplicate_webhooks", sa.Integer(), nullable=True)
    )


def downgrade() -> None:
    op.drop_column("reconciliation_item", "duplicate_webhooks")
