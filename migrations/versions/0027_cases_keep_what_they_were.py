"""What a case was about, kept with the case

A case's amounts and reason were read from the verdicts of the run that last raised it.
A later run of its day that no longer finds it clears it, and once that earlier run's
verdicts are pruned the cleared case showed no amount, no reason and an action naming no
sum. ``exception_case`` now keeps the reason and the amounts of the latest run that
raised it; rows stored before this revision take them from that run's verdicts where
they are still kept.

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_KEPT = ("reason", "expected_cents", "actual_cents")


def upgrade() -> None:
    op.add_column("exception_case", sa.Column("reason", sa.Text(), nullable=True))
    op.add_column("exception_case", sa.Column("expected_cents", sa.BigInteger(), nullable=True))
    op.add_column("exception_case", sa.Column("actual_cents", sa.BigInteger(), nullable=True))
    for column in _KEPT:
        op.execute(
            f"UPDATE exception_case SET {column} = ("  # noqa: S608 (constants)
            f"SELECT i.{column} FROM reconciliation_item i "
            "WHERE i.run_id = exception_case.last_seen_run_id "
            "AND i.subject = exception_case.subject AND i.ref = exception_case.ref)"
        )


def downgrade() -> None:
    with op.batch_alter_table("exception_case") as batch:
        for column in _KEPT:
            batch.drop_column(column)
