"""day verdicts, the bridge, and amounts due

The columns behind a day verdict a finance team can sign: the run's verdict; per item, when
a pending one becomes a break, the last day a refund is possible, whether it was carried
across midnight, and a Pix's net amount; a due-date charge's terms (fine, interest,
abatement, discount) and the amount due on the day it was paid; a Pix's
``componentesValor``; and the fee netted from a statement line.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS: dict[str, list[sa.Column[object]]] = {
    "reconciliation_run": [sa.Column("verdict", sa.String(length=32), nullable=True)],
    "reconciliation_item": [
        sa.Column("due_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("refund_by", sa.Date(), nullable=True),
        sa.Column("carried", sa.String(length=8), nullable=True),
        sa.Column("net_cents", sa.BigInteger(), nullable=True),
        sa.Column("priority", sa.Integer(), nullable=True),
    ],
    "expected_payment": [
        sa.Column("terms", sa.Text(), nullable=True),
        sa.Column("amount_due_cents", sa.BigInteger(), nullable=True),
    ],
    "pix_received": [sa.Column("components", sa.Text(), nullable=True)],
    "statement_entry": [sa.Column("fee_cents", sa.BigInteger(), nullable=True)],
}


def upgrade() -> None:
    for table, columns in COLUMNS.items():
        with op.batch_alter_table(table, schema=None) as batch_op:
            for column in columns:
                batch_op.add_column(column)


def downgrade() -> None:
    for table, columns in COLUMNS.items():
        with op.batch_alter_table(table, schema=None) as batch_op:
            for column in reversed(columns):
                batch_op.drop_column(column.name)
