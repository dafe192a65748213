"""The day's exceptions: one row per exception case its latest completed run raised, with
the state and note the case has now (people acknowledge and resolve after the run).

Columns: ``key``, then ``reconcile.cases.EXCEPTION_FIELDS``. ``key`` is
``exc:{date}:{subject}:{ref}:{status}``: what identifies an exception case, so it is the
same on every run and every export of the day."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import date
from typing import Any

from sqlalchemy import Engine

from reconcile.cases import EXCEPTION_FIELDS, iter_case_rows
from reconcile.db import session_scope
from reconcile.exports.cells import IDENTIFIERS, masked, typed
from reconcile.exports.runs import latest_completed_run
from reconcile.exports.table import Row, Table


def exception_columns() -> tuple[str, ...]:
    return ("key", *EXCEPTION_FIELDS)


def exception_key(day: date, subject: str, ref: str, status: str) -> str:
    return f"exc:{day.isoformat()}:{subject}:{ref}:{status}"


def _row(day: date, entry: Mapping[str, Any], columns: tuple[str, ...]) -> Row:
    row: Row = {column: entry.get(column) for column in columns}
    for column in columns:
        if column not in IDENTIFIERS:
            row[column] = masked(column, typed(row[column]))
    row["date"] = day
    row["key"] = exception_key(day, str(entry["subject"]), str(entry["ref"]), str(entry["status"]))
    return row


def exception_table(engine: Engine, day: date) -> Table:
    """``NotReconciled`` when the day has no completed run (raised here, before any row)."""
    run = latest_completed_run(engine, day)
    columns = exception_columns()

    def rows() -> Iterator[Row]:
        # Read as written: a bad day's tens of thousands of cases never sit whole in memory.
        with session_scope(engine) as session:
            # Open when the run ended, as the case stands now: one resolved since says so,
            # one resolved before is no exception of this run.
            for entry in iter_case_rows(
                session,
                run_id=run.run_id,
                or_changed_since=run.started_at,
                by_priority=True,
            ):
                yield _row(day, entry, columns)

    return Table(
        name=f"exceptions-{day.isoformat()}", columns=columns, rows=rows(), notice=run.notice()
    )
