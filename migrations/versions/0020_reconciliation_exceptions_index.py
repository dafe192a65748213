"""Index a run's exceptions only

``ix_reconciliation_item_run_exception`` indexed every verdict of a run by
``(run_id, exception)``: on a million-verdict day nearly every entry had the same key
(the run, false), and keeping it cost more than the table's other two indexes together
(0.75 s of 2.9 s to write half of the nightly benchmark's Pix received). It only ever
served lookups of a run's exceptions, a few percent of its rows: a partial index of
those rows serves them and costs the agreeing verdicts nothing. A query reaches it by
saying ``exception`` as SQLAlchemy writes a boolean column for each dialect
(``WHERE exception`` on PostgreSQL, ``exception = 1`` on SQLite); ``exception IS TRUE``
is not proven to match it.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_index("ix_reconciliation_item_run_exception", table_name="reconciliation_item")
    op.create_index(
        "ix_reconciliation_item_exceptions",
        "reconciliation_item",
        ["run_id"],
        postgresql_where=sa.text("exception"),
        sqlite_where=sa.text("exception = 1"),
    )


def downgrade() -> None:
    op.drop_index("ix_reconciliation_item_exceptions", table_name="reconciliation_item")
    op.create_index(
        "ix_reconciliation_item_run_exception", "reconciliation_item", ["run_id", "exception"]
    )
