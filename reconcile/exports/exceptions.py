"""The day's exceptions: one row per exception of its latest completed run's report, with
the state and note its case has now (people acknowledge and resolve after the run).

Columns: ``key``, then ``reconcile.cases.EXCEPTION_FIELDS``. ``key`` is
``exc:{date}:{subject}:{ref}:{status}``: what identifies an exception case, so it is the
same on every run and every export of the day."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from sqlalchemy import Engine, select

from reconcile.cases import EXCEPTION_FIELDS
from reconcile.db import session_scope, table_of
from reconcile.exports.cells import IDENTIFIERS, masked, typed
from reconcile.exports.runs import latest_completed_run
from reconcile.exports.table import Row, Table
from reconcile.models import ExceptionCase


def exception_columns() -> tuple[str, ...]:
    return ("key", *EXCEPTION_FIELDS)


def exception_key(day: date, subject: str, ref: str, status: str) -> str:
    return f"exc:{day.isoformat()}:{subject}:{ref}:{status}"


@dataclass(frozen=True)
class _Case:
    subject: str
    ref: str
    status: str
    state: str
    note: str | None


def _cases_now(engine: Engine, day: date) -> dict[int, _Case]:
    cases = table_of(ExceptionCase)
    with session_scope(engine) as session:
        rows = session.execute(
            select(
                cases.c.id,
                cases.c.subject,
                cases.c.ref,
                cases.c.status,
                cases.c.state,
                cases.c.note,
            ).where(cases.c.business_date == day)
        )
        return {
            int(row.id): _Case(row.subject, row.ref, row.status, row.state, row.note)
            for row in rows
        }


def _row(
    day: date, entry: Mapping[str, Any], columns: tuple[str, ...], now: Mapping[int, _Case]
) -> Row:
    row: Row = {column: entry.get(column) for column in columns}
    case_id = entry.get("case_id")
    case = now.get(case_id) if isinstance(case_id, int) else None
    if case is not None:
        # What identifies the case is the case's; what people did since the run, too.
        for name in ("subject", "ref", "status", "state", "note"):
            if name in row:
                row[name] = getattr(case, name)
    for column in columns:
        if column not in IDENTIFIERS:
            row[column] = masked(column, typed(row[column]))
    row["date"] = day
    subject, ref, status = (
        (case.subject, case.ref, case.status)
        if case is not None
        else (str(entry.get("subject")), str(entry.get("ref")), str(entry.get("status")))
    )
    row["key"] = exception_key(day, subject, ref, status)
    return row


def exception_table(engine: Engine, day: date) -> Table:
    """``NotReconciled`` when the day has no completed run (raised here, before any row)."""
    run = latest_completed_run(engine, day)
    entries: list[dict[str, Any]] = run.report.get("exceptions") or []
    now = _cases_now(engine, day)
    columns = exception_columns()

    def rows() -> Iterator[Row]:
        for entry in entries:
            yield _row(day, entry, columns, now)

    return Table(name=f"exceptions-{day.isoformat()}", columns=columns, rows=rows())
