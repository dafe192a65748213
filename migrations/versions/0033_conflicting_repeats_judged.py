"""A conflicting repeat is its day's exception

A webhook repeat stating other money than the item it repeats flagged the item
(migration 0028), and nothing else: the nightly run never read the flag, so a day on
which a notification claimed money the API and statement do not show could end
``reconciled``. ``inbox_item.conflicted_at`` keeps when the first such repeat came, and
``conflict_amount_cents`` the money it stated: the nightly run of that day makes it an
exception, found through a partial index of the few flagged items. Items flagged before
this revision have neither, so that past days keep the answers they had.

Revision ID: 0033
Revises: 0032
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0033"
down_revision: str | None = "0032"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "inbox_item", sa.Column("conflicted_at", sa.DateTime(timezone=True), nullable=True)
    )
    op.add_column("inbox_item", sa.Column("conflict_amount_cents", sa.BigInteger(), nullable=True))
    op.create_index(
        "ix_inbox_item_conflicted",
        "inbox_item",
        ["conflicted_at"],
        postgresql_where=sa.text("conflicted_at IS NOT NULL"),
        sqlite_where=sa.text("conflicted_at IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_inbox_item_conflicted", table_name="inbox_item")
    with op.batch_alter_table("inbox_item") as batch:
        batch.drop_column("conflict_amount_cents")
        batch.drop_column("conflicted_at")
