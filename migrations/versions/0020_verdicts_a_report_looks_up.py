"""Index the verdicts a run's report looks up: exceptions, pending and carried items

``ix_reconciliation_item_run_exception`` indexed every verdict of a run by
``(run_id, exception)``: on a million-verdict day nearly every entry had the same key
(the run, false), and keeping it cost more than the table's other two indexes together
(0.75 s of 2.9 s to write half of the nightly benchmark's Pix received). It only ever
served lookups of a run's exceptions, a few percent of its rows: a partial index of
those rows serves them and costs the agreeing verdicts nothing. A query reaches it by
saying ``exception`` as SQLAlchemy writes a boolean column for each dialect
(``WHERE exception`` on PostgreSQL, ``exception = 1`` on SQLite); ``exception IS TRUE``
is not proven to match it.

The report also reads a run's pending items (780 of 1,146,410 verdicts on that day) and
its carried ones (5,200) in eight statements that each read every verdict of the run;
two more partial indexes hold those rows only.

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

# name: (PostgreSQL's predicate, SQLite's predicate)
PARTIAL = {
    "ix_reconciliation_item_exceptions": ("exception", "exception = 1"),
    "ix_reconciliation_item_pending": ("status = 'pending'", "status = 'pending'"),
    "ix_reconciliation_item_carried": ("carried IS NOT NULL", "carried IS NOT NULL"),
}


def upgrade() -> None:
    op.drop_index("ix_reconciliation_item_run_exception", table_name="reconciliation_item")
    for name, (postgresql, sqlite) in PARTIAL.items():
        op.create_index(
            name,
            "reconciliation_item",
            ["run_id"],
            postgresql_where=sa.text(postgresql),
            sqlite_where=sa.text(sqlite),
        )


def downgrade() -> None:
    for name in PARTIAL:
        op.drop_index(name, table_name="reconciliation_item")
    op.create_index(
        "ix_reconciliation_item_run_exception", "reconciliation_item", ["run_id", "exception"]
    )
