from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, select, text
from sqlmodel import SQLModel

from migrations.apply import head_revision, is_up_to_date
from reconcile import models  # noqa: F401  (registers the tables)
from reconcile.db import table_of
from reconcile.models import ReconciliationItem


# Neither dialect reflects an index on an expression, so autogenerate skips them (and
# says so); the test below checks those by their plans.
@pytest.mark.filterwarnings("ignore:.*expression-based index")
def test_migrations_create_exactly_the_models(engine: Engine) -> None:
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        differences = compare_metadata(context, SQLModel.metadata)
    assert differences == []
    assert is_up_to_date(engine)
    assert head_revision(engine) is not None


def test_a_days_pix_are_found_by_when_they_happened(engine: Engine) -> None:
    """The index the matchers' day filter needs (migration 0019) is there and used."""
    query = (
        "SELECT id FROM pix_received WHERE coalesce(horario, created_at) >= :start "
        "AND coalesce(horario, created_at) < :end"
    )
    window = {"start": "2026-03-10 03:00:00+00", "end": "2026-03-11 03:00:00+00"}
    with engine.connect() as connection:
        if engine.dialect.name == "postgresql":
            connection.execute(text("SET enable_seqscan = off"))
            plan = connection.execute(text("EXPLAIN " + query), window)
        else:
            plan = connection.execute(text("EXPLAIN QUERY PLAN " + query), window)
        shown = " ".join(str(row) for row in plan)
    assert "ix_pix_received_happened" in shown


def test_a_runs_exceptions_are_found_by_their_own_index(engine: Engine) -> None:
    """The partial index of a run's exceptions (migration 0020) serves the engine's
    queries as SQLAlchemy writes them for the dialect: ``exception IS TRUE`` would not."""
    items = table_of(ReconciliationItem)
    query = select(items.c.id).where(items.c.run_id == 7, items.c.exception)
    written = str(query.compile(dialect=engine.dialect, compile_kwargs={"literal_binds": True}))
    with engine.connect() as connection:
        if engine.dialect.name == "postgresql":
            connection.execute(text("SET enable_seqscan = off"))
            plan = connection.execute(text("EXPLAIN " + written))
        else:
            plan = connection.execute(text("EXPLAIN QUERY PLAN " + written))
        shown = " ".join(str(row) for row in plan)
    assert "ix_reconciliation_item_exceptions" in shown
