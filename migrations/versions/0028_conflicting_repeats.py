"""A repeat with another amount is flagged

A webhook delivery carrying a key already in the inbox counted as a duplicate whatever it
held: a provider's corrected amount, or a second Pix sent under one endToEndId, went
unseen. ``inbox_item.content_digest`` keeps a digest of the amount a Pix or a refund
states; a later webhook delivery of the key with another digest flags the item
(``inbox_item.warnings``). Items stored before this revision have none and are compared
with nothing.

Revision ID: 0028
Revises: 0027
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0028"
down_revision: str | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("inbox_item", sa.Column("content_digest", sa.String(32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("inbox_item") as batch:
        batch.drop_column("content_digest")
