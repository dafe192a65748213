"""Charges by the day that concerns them

A charge belongs to the day it was created and to the day it falls due (and to any day a
Pix paid it, found by its txid). Without an index on either date, the charges matcher
read every charge the table keeps to find one day's, a cost that grew with every day of
history (docs/benchmarks.md).

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-26
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_expected_payment_created", "expected_payment", ["created_at_provider"])
    op.create_index("ix_expected_payment_due", "expected_payment", ["due_date"])


def downgrade() -> None:
    op.drop_index("ix_expected_payment_due", table_name="expected_payment")
    op.drop_index("ix_expected_payment_created", table_name="expected_payment")
