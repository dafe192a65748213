"""reconciliation items without a foreign key

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-22
"""

import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# SQLite keeps foreign keys unnamed; a naming convention lets batch mode find this one.
CONVENTION = {"fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s"}
SQLITE_NAME = "fk_reconciliation_item_run_id_reconciliation_run"
POSTGRES_NAME = "reconciliation_item_run_id_fkey"


def _name() -> str:
    return POSTGRES_NAME if op.get_bind().dialect.name == "postgresql" else SQLITE_NAME


def _views() -> ModuleType:
    """Revision 0006, which creates the dashboard views: SQLite rebuilds a table by renaming
    a copy, which it refuses while views use the table, so they are dropped and made again
    exactly as 0006 made them."""
    path = Path(__file__).with_name("0006_dashboard_views.py")
    spec = importlib.util.spec_from_file_location("revision_0006", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rebuild(alter: Callable[[Any], None]) -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    views = _views() if sqlite else None
    if views is not None:
        views.downgrade()
    with op.batch_alter_table(
        "reconciliation_item", schema=None, naming_convention=CONVENTION
    ) as batch_op:
        alter(batch_op)
    if views is not None:
        views.upgrade()


def upgrade() -> None:
    # Checking a million verdicts one by one against their run doubled a nightly run; only
    # the engine writes them, right after creating the run.
    _rebuild(lambda batch_op: batch_op.drop_constraint(_name(), type_="foreignkey"))


def downgrade() -> None:
    _rebuild(
        lambda batch_op: batch_op.create_foreign_key(
            _name(), "reconciliation_run", ["run_id"], ["id"]
        )
    )
