"""Item references and warnings; amounts that could not be read

Every inbox item is findable by any reference it carries (``inbox_ref``), with every
delivery that carried it (``delivery_item`` holds the repeats); an item keeps the fields
it read otherwise than documented (``inbox_item.warnings``). A Pix or refund whose amount
could not be read is stored with a null amount until the API states it. Items stored
before this revision are indexed here.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-24
"""

import importlib.util
import json
from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import sqlalchemy as sa
from alembic import op

from reconcile.payloads.refs import item_refs, ref_values

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 5000


def _views() -> ModuleType:
    """Revision 0006, which creates the dashboard views: SQLite rebuilds a table by renaming
    a copy, which it refuses while views use the table, so they are dropped and made again
    exactly as 0006 made them (as 0008 does)."""
    path = Path(__file__).with_name("0006_dashboard_views.py")
    spec = importlib.util.spec_from_file_location("revision_0006", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _amounts(alter: Callable[[Any], None]) -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    views = _views() if sqlite else None
    if views is not None:
        views.downgrade()
    for table in ("pix_received", "pix_refund"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            alter(batch_op)
    if views is not None:
        views.upgrade()


def _index_existing_items() -> None:
    """The references of items stored before this revision, in batches by id."""
    bind = op.get_bind()
    refs = sa.table("inbox_ref", sa.column("ref", sa.String), sa.column("item_id", sa.BigInteger))
    last = 0
    while True:
        rows = bind.execute(
            sa.text(
                "SELECT id, kind, payload FROM inbox_item WHERE id > :last ORDER BY id LIMIT :n"
            ),
            {"last": last, "n": BATCH},
        ).all()
        if not rows:
            return
        found: list[dict[str, Any]] = []
        for item_id, kind, payload in rows:
            try:
                parsed = json.loads(payload, parse_float=Decimal)
            except ValueError:
                continue
            found.extend(
                {"ref": ref, "item_id": item_id} for ref in ref_values(item_refs(kind, parsed))
            )
        if found:
            bind.execute(refs.insert(), found)
        last = rows[-1][0]


def upgrade() -> None:
    op.create_table(
        "inbox_ref",
        sa.Column("ref", sa.String(length=100), nullable=False),
        sa.Column("item_id", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("ref", "item_id"),
    )
    op.create_table(
        "delivery_item",
        sa.Column("item_id", sa.BigInteger(), nullable=False),
        sa.Column("delivery_id", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("item_id", "delivery_id"),
    )
    with op.batch_alter_table("inbox_item", schema=None) as batch_op:
        batch_op.add_column(sa.Column("warnings", sa.Text(), nullable=True))
    _amounts(lambda batch_op: batch_op.alter_column("amount_cents", nullable=True))
    # Repeats seen before this revision were only counted; they stay unlisted.
    _index_existing_items()


def downgrade() -> None:
    # Unknown amounts cannot go back to a column that requires one. These rows never
    # counted (they wait for the API); their items become pending again, for the older
    # code to fail them visibly.
    for table in ("pix_received", "pix_refund"):
        op.execute(
            "UPDATE inbox_item SET status = 'pending', processed_at = NULL "  # noqa: S608 (constants)
            f"WHERE id IN (SELECT inbox_item_id FROM {table} WHERE amount_cents IS NULL)"
        )
        op.execute(f"DELETE FROM {table} WHERE amount_cents IS NULL")  # noqa: S608 (constants)
    _amounts(lambda batch_op: batch_op.alter_column("amount_cents", nullable=False))
    with op.batch_alter_table("inbox_item", schema=None) as batch_op:
        batch_op.drop_column("warnings")
    op.drop_table("delivery_item")
    op.drop_table("inbox_ref")
