"""What the pages read: runs and their reports, exception cases with the verdicts that
raised them, and hourly webhook figures — set-based, so that a day of 100,000 movements
still answers in well under a second (benchmarks/dashboard.py)."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sqlalchemy import ColumnElement, Integer, and_, case, cast, func, select
from sqlalchemy.orm import aliased
from sqlmodel import Session

from reconcile.case_detail import COMPLETED, Run
from reconcile.cases import priority_as_of
from reconcile.db import dialect_of, table_of
from reconcile.models import (
    CaseState,
    Confirmation,
    ExceptionCase,
    InboxItem,
    PixReceived,
    ReconciliationItem,
    ReconciliationRun,
)
from reconcile.priorities import URGENT_PRIORITY


def _run(row: Any) -> Run:
    return Run(row.id, row.business_date, row.finished_at, row.verdict)


def _run_columns() -> tuple[Any, ...]:
    runs = table_of(ReconciliationRun)
    return (runs.c.id, runs.c.business_date, runs.c.finished_at, runs.c.verdict)


def latest_runs(session: Session, first: date, last: date) -> dict[date, Run]:
    runs = table_of(ReconciliationRun)
    newest = (
        select(func.max(runs.c.id))
        .where(
            runs.c.status == COMPLETED,
            runs.c.business_date >= first,
            runs.c.business_date <= last,
        )
        .group_by(runs.c.business_date)
    )
    rows = session.execute(select(*_run_columns()).where(runs.c.id.in_(newest.scalar_subquery())))
    return {row.business_date: _run(row) for row in rows}


def reconciled_days(session: Session, limit: int = 62) -> list[date]:
    """Days with a completed run, newest first."""
    runs = table_of(ReconciliationRun)
    rows = session.execute(
        select(runs.c.business_date)
        .where(runs.c.status == COMPLETED)
        .group_by(runs.c.business_date)
        .order_by(runs.c.business_date.desc())
        .limit(limit)
    )
    return [row[0] for row in rows]


class Reports:
    """Parsed reports by run id. A completed run's report never changes, and a busy day's
    report is megabytes of JSON: each is read and parsed once per process."""

    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._parsed: OrderedDict[int, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, session: Session, run_id: int) -> dict[str, Any]:
        with self._lock:
            if run_id in self._parsed:
                self._parsed.move_to_end(run_id)
                return self._parsed[run_id]
        runs = table_of(ReconciliationRun)
        text = session.execute(select(runs.c.report).where(runs.c.id == run_id)).scalar_one()
        report: dict[str, Any] = json.loads(text) if text else {}
        with self._lock:
            self._parsed[run_id] = report
            while len(self._parsed) > self._size:
                self._parsed.popitem(last=False)
        return report


# --- exception cases ---------------------------------------------------------------

STATE_FILTERS: dict[str, tuple[str, ...]] = {
    "remaining": tuple(state.value for state in CaseState.remaining()),
    "open": (CaseState.OPEN.value,),
    "acknowledged": (CaseState.ACKNOWLEDGED.value,),
    "resolved": (CaseState.RESOLVED.value,),
    "cleared": (CaseState.CLEARED.value,),
    "all": tuple(state.value for state in CaseState),
}
SORTS = ("priority", "amount", "age")


@dataclass(frozen=True)
class CaseQuery:
    state: str = "remaining"
    subject: str | None = None
    status: str | None = None
    day: date | None = None
    sort: str = "priority"
    page: int = 1


def _newest_runs() -> Any:
    runs = table_of(ReconciliationRun)
    return (
        select(runs.c.business_date, func.max(runs.c.id).label("run_id"))
        .where(runs.c.status == COMPLETED)
        .group_by(runs.c.business_date)
        .subquery("newest")
    )


def _case_filters(query: CaseQuery) -> list[ColumnElement[bool]]:
    cases = table_of(ExceptionCase)
    found: list[ColumnElement[bool]] = [
        cases.c.state.in_(STATE_FILTERS.get(query.state, STATE_FILTERS["remaining"]))
    ]
    if query.subject:
        found.append(cases.c.subject == query.subject)
    if query.status:
        found.append(cases.c.status == query.status)
    if query.day is not None:
        found.append(cases.c.business_date == query.day)
    return found


def list_cases(
    session: Session, query: CaseQuery, page_size: int, today: date
) -> tuple[list[dict[str, Any]], int]:
    """One page of cases with the verdict of their day's latest run, and how many match.
    A work queue: money near its last day to go back comes first as of ``today``."""
    cases, items, runs = (
        table_of(ExceptionCase),
        table_of(ReconciliationItem),
        table_of(ReconciliationRun),
    )
    newest = _newest_runs()
    first_run = aliased(runs, name="first_run")
    amount = func.coalesce(items.c.actual_cents, items.c.expected_cents, 0)
    priority = priority_as_of(items, today)
    filters = _case_filters(query)
    total = session.execute(select(func.count()).where(*filters)).scalar_one()
    order: dict[str, list[Any]] = {
        "priority": [priority.asc().nulls_last(), amount.desc()],
        "amount": [amount.desc(), priority.asc().nulls_last()],
        "age": [first_run.c.started_at.asc(), cases.c.business_date.asc()],
    }
    stmt = (
        select(
            cases.c.id,
            cases.c.business_date,
            cases.c.subject,
            cases.c.ref,
            cases.c.status,
            cases.c.state,
            cases.c.note,
            cases.c.updated_at,
            items.c.reason,
            items.c.expected_cents,
            items.c.actual_cents,
            priority.label("priority"),
            items.c.refund_by,
            first_run.c.started_at.label("first_seen_at"),
        )
        .select_from(
            cases.outerjoin(newest, newest.c.business_date == cases.c.business_date)
            .outerjoin(
                items,
                _its_verdict(items, cases, newest),
            )
            .outerjoin(first_run, first_run.c.id == cases.c.first_seen_run_id)
        )
        .where(*filters)
        .order_by(*order.get(query.sort, order["priority"]), cases.c.id)
        .limit(page_size)
        .offset((max(query.page, 1) - 1) * page_size)
    )
    return [dict(row._mapping) for row in session.execute(stmt)], int(total)


def _its_verdict(items: Any, cases: Any, newest: Any) -> ColumnElement[bool]:
    """A case's verdict in the newest run of its day: the same subject, ref and status."""
    return and_(
        items.c.run_id == newest.c.run_id,
        items.c.subject == cases.c.subject,
        items.c.ref == cases.c.ref,
        items.c.status == cases.c.status,
    )


def urgent_med_cases(session: Session, day: date, today: date) -> set[str]:
    """The MED cases of ``day`` whose remaining exception is priority 1 as of ``today``,
    judged as the exceptions list judges it: the day's MED table flags what the work
    queue puts first, not another reading of the deadline."""
    cases, items = table_of(ExceptionCase), table_of(ReconciliationItem)
    newest = _newest_runs()
    priority = priority_as_of(items, today)
    stmt = (
        select(cases.c.ref)
        .select_from(
            cases.join(newest, newest.c.business_date == cases.c.business_date).join(
                items,
                _its_verdict(items, cases, newest),
            )
        )
        .where(
            cases.c.business_date == day,
            cases.c.subject == "infraction",
            cases.c.state.in_(STATE_FILTERS["remaining"]),
            priority == URGENT_PRIORITY,
        )
    )
    return {str(ref) for ref in session.execute(stmt).scalars()}


def case_facets(session: Session, query: CaseQuery) -> dict[str, list[str]]:
    """The subjects and statuses among the cases of the chosen state (for the filters)."""
    cases = table_of(ExceptionCase)
    states = cases.c.state.in_(STATE_FILTERS.get(query.state, STATE_FILTERS["remaining"]))
    rows = session.execute(
        select(cases.c.subject, cases.c.status)
        .where(states)
        .group_by(cases.c.subject, cases.c.status)
    ).all()
    return {
        "subjects": sorted({row.subject for row in rows}),
        "statuses": sorted({row.status for row in rows}),
    }


def remaining_case_states(session: Session, day: date) -> dict[int, str]:
    """The live state of the day's cases that still count (after the run, people act)."""
    cases = table_of(ExceptionCase)
    rows = session.execute(
        select(cases.c.id, cases.c.state).where(
            cases.c.business_date == day, cases.c.state.in_(STATE_FILTERS["remaining"])
        )
    )
    return {int(row.id): str(row.state) for row in rows}


# --- webhook figures per hour ----------------------------------------------------------


@dataclass
class Hour:
    """Pix received whose own time (``horario``) falls in one UTC hour."""

    hour: int  # hours since the epoch, UTC
    webhook: int = 0  # notified by webhook (whether or not polling found them too)
    poll_only: int = 0  # found only by polling the API
    lag_count: int = 0
    lag_sum: float = 0.0
    lag_max: float | None = None

    @property
    def lag_avg(self) -> float | None:
        return self.lag_sum / self.lag_count if self.lag_count else None


def hourly_pix(session: Session, start: datetime, end: datetime) -> dict[int, Hour]:
    """Per UTC hour of [start, end): Pix by how they arrived, and the webhook lag (Pix
    time → webhook arrival, as ``v_webhook_latency``). One grouped statement: the
    database reduces the day's rows to at most 24 a day."""
    pix, inbox = table_of(PixReceived), table_of(InboxItem)
    if dialect_of(session) == "postgresql":
        bucket: Any = cast(func.floor(func.extract("epoch", pix.c.horario) / 3600), Integer)
        lag: Any = func.extract("epoch", inbox.c.webhook_at - pix.c.horario)
    else:
        bucket = cast(func.strftime("%s", pix.c.horario), Integer) // 3600
        lag = (func.julianday(inbox.c.webhook_at) - func.julianday(pix.c.horario)) * 86400.0
    notified = inbox.c.webhook_count > 0
    rows = session.execute(
        select(
            bucket.label("hour"),
            func.sum(case((notified, 1), else_=0)),
            func.sum(case((notified, 0), else_=1)),
            func.count(inbox.c.webhook_at),
            func.sum(lag),
            func.max(lag),
        )
        .select_from(pix.join(inbox, inbox.c.id == pix.c.inbox_item_id))
        .where(
            pix.c.horario >= start,
            pix.c.horario < end,
            # A Pix the provider's API denies (a possible forgery) was never received.
            pix.c.confirmation != Confirmation.UNCONFIRMED_WEBHOOK.value,
        )
        .group_by(bucket)
    )
    return {
        int(hour): Hour(
            int(hour),
            int(webhook or 0),
            int(poll_only or 0),
            int(lag_count or 0),
            float(lag_sum or 0.0),
            float(lag_max) if lag_max is not None else None,
        )
        for hour, webhook, poll_only, lag_count, lag_sum, lag_max in rows
    }
