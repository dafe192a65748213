"""Results and references by the inbox item they came from, for retention

``pixrecon prune`` deletes inbox items no result points at. Every deleted item makes the
database check each table holding a foreign key to ``inbox_item`` for rows that still
point at it; without an index on ``inbox_item_id`` each check reads the whole table
(about 50 ms per deleted item against 700,000 Pix received on PostgreSQL: hours for a
day's worth). The same indexes answer prune's own "which of these items does a result
point at" and "which results came from these items". ``inbox_ref``'s primary key begins
with the reference, so deleting an item's references by its id read the whole table too.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-25
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Named as ``index=True`` on the models' ``inbox_item_id`` names them.
RESULT_TABLES = (
    "pix_received",
    "pix_refund",
    "account_movement",
    "infraction",
    "recurrence",
    "recurring_charge",
    "expected_payment",
    "statement_entry",
    "balance_snapshot",
)


def upgrade() -> None:
    for table in RESULT_TABLES:
        op.create_index(op.f(f"ix_{table}_inbox_item_id"), table, ["inbox_item_id"])
    op.create_index(op.f("ix_inbox_ref_item_id"), "inbox_ref", ["item_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_inbox_ref_item_id"), table_name="inbox_ref")
    for table in reversed(RESULT_TABLES):
        op.drop_index(op.f(f"ix_{table}_inbox_item_id"), table_name=table)
