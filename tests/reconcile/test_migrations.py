from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import ColumnElement, Engine, Select, Table, select, text
from sqlmodel import SQLModel

from migrations.apply import head_revision, is_up_to_date
from reconcile import models  # noqa: F401  (registers the tables)
from reconcile.db import table_of
from reconcile.matching.judgement import is_pending
from reconcile.matching.repeats import conflicted_between
from reconcile.models import ReconciliationItem
from reconcile.timeutil import business_day_bounds


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


@pytest.mark.parametrize(
    ("index", "query"),
    [
        (
            # Migration 0019: the matchers' day filter.
            "ix_pix_received_happened",
            "SELECT id FROM pix_received WHERE coalesce(horario, created_at) >= :start "
            "AND coalesce(horario, created_at) < :end",
        ),
        # Migration 0021: the charges created, and those due, on the day.
        (
            "ix_expected_payment_created",
            "SELECT id FROM expected_payment WHERE created_at_provider >= :start "
            "AND created_at_provider < :end",
        ),
        ("ix_expected_payment_due", "SELECT id FROM expected_payment WHERE due_date = :day"),
    ],
)
def test_a_days_rows_are_found_by_an_index_of_the_day(
    engine: Engine, index: str, query: str
) -> None:
    """The indexes the matchers' day filters need are there and used."""
    window = {
        "start": "2026-03-10 03:00:00+00",
        "end": "2026-03-11 03:00:00+00",
        "day": "2026-03-10",
    }
    with engine.connect() as connection:
        if engine.dialect.name == "postgresql":
            connection.execute(text("SET enable_seqscan = off"))
            plan = connection.execute(text("EXPLAIN " + query), window)
        else:
            plan = connection.execute(text("EXPLAIN QUERY PLAN " + query), window)
        shown = " ".join(str(row) for row in plan)
    assert index in shown


def _plan(engine: Engine, query: Select[Any]) -> str:
    """The plan of ``query`` with its parameters bound as the engine binds them. On
    PostgreSQL it is the generic plan of a prepared statement, the one a long-running
    worker ends up with: an index whose predicate only matches a bound value's custom
    plan would be found here unused."""
    compiled = query.compile(dialect=engine.dialect, compile_kwargs={"render_postcompile": True})
    with engine.connect() as connection:
        if engine.dialect.name == "postgresql":
            sql = str(compiled)
            shown = []
            for number, name in enumerate(compiled.params, 1):
                sql = sql.replace(f"%({name})s", f"${number}")
                value = compiled.params[name]
                shown.append(
                    f"'{value.isoformat()}'" if isinstance(value, datetime) else repr(value)
                )
            connection.execute(text("SET enable_seqscan = off"))
            connection.execute(text("SET plan_cache_mode = force_generic_plan"))
            connection.exec_driver_sql("PREPARE looked_up AS " + sql)
            plan = connection.exec_driver_sql(f"EXPLAIN EXECUTE looked_up({', '.join(shown)})")
        else:
            assert compiled.positiontup is not None
            values = tuple(compiled.params[name] for name in compiled.positiontup)
            plan = connection.exec_driver_sql("EXPLAIN QUERY PLAN " + str(compiled), values)
        return " ".join(str(row) for row in plan)


@pytest.mark.parametrize(
    ("index", "which"),
    [
        ("ix_reconciliation_item_exceptions", lambda items: items.c.exception),
        ("ix_reconciliation_item_pending", is_pending),
        ("ix_reconciliation_item_carried", lambda items: items.c.carried == "in"),
        ("ix_reconciliation_item_carried", lambda items: items.c.carried.is_not(None)),
    ],
)
def test_the_verdicts_a_report_looks_up_are_found_by_their_own_indexes(
    engine: Engine, index: str, which: Callable[[Table], ColumnElement[bool]]
) -> None:
    """The partial indexes of a run's exceptions, pending and carried items (migration
    0020) serve the engine's queries as it writes them: ``exception IS TRUE``, or a
    pending status bound as a parameter, would not."""
    items = table_of(ReconciliationItem)
    assert index in _plan(engine, select(items.c.id).where(items.c.run_id == 7, which(items)))


DAY = business_day_bounds(date(2026, 3, 10))


def test_a_days_conflicting_repeats_are_found_by_their_own_index(engine: Engine) -> None:
    """The nightly run looks up the few items a conflicting repeat flagged on the day
    through their partial index (migration 0033), never by reading the inbox."""
    assert "ix_inbox_item_conflicted" in _plan(engine, conflicted_between(*DAY))
