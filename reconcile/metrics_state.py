"""Gauges read from the database at each scrape: what a person must act on, whichever
process did the work — the inbox's backlog, the periodic jobs, the days' verdicts, the
open exceptions, MED money at risk and how much of each day the webhooks announced.

Counters in a process cannot say these (a worker restarts, several run at once); the
database can, in a few indexed queries. Served by the workers' metrics server in
production and by `pixrecon serve`'s ``/metrics`` in single-node mode."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import Engine, func, select
from sqlmodel import Session

from reconcile.cases import priority_as_of
from reconcile.db import UNAVAILABLE_ERRORS, session_scope, table_of
from reconcile.logs import get_logger
from reconcile.matching.judgement import DayVerdict
from reconcile.models import (
    AccountMovement,
    CaseState,
    Confirmation,
    ExceptionCase,
    InboxItem,
    ItemStatus,
    PixReceived,
    PixRefund,
    ReconciliationItem,
    ReconciliationRun,
    ScheduledJob,
)
from reconcile.queries import webhook_coverage
from reconcile.schedule import job_intervals
from reconcile.settings import Settings
from reconcile.timeutil import as_utc, business_day_bounds, business_today, utcnow

log = get_logger(__name__)

# Days whose latest verdict is exported: a week covers a weekend's backlog of nights.
VERDICT_DAYS = 7
# Statuses a person may have to look at; processed items are counted by the workers'
# pixrecon_items_processed_total, and counting them here would scan the whole inbox.
WAITING_STATUSES = (ItemStatus.PENDING, ItemStatus.FAILED, ItemStatus.UNSUPPORTED)
CONFIRMED_SUBJECTS: tuple[tuple[str, Any], ...] = (
    ("pix", PixReceived),
    ("refund", PixRefund),
    ("movement", AccountMovement),
)


class DatabaseStateCollector(Collector):
    def __init__(self, engine: Engine, settings: Settings) -> None:
        self._engine = engine
        self._settings = settings

    def collect(self) -> Iterator[GaugeMetricFamily]:
        up = GaugeMetricFamily(
            "pixrecon_database_up",
            "1 when the database answered the queries of this scrape, else 0 (and the "
            "gauges read from it are absent)",
        )
        try:
            with session_scope(self._engine) as session:
                families = list(self._families(session, utcnow()))
        except UNAVAILABLE_ERRORS as exc:
            log.warning("metrics_database_unavailable", error=type(exc).__name__)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from families

    def _families(self, session: Session, now: datetime) -> Iterator[GaugeMetricFamily]:
        yield from self._inbox(session, now)
        yield self._confirmation_backlog(session)
        yield from self._jobs(session)
        yield from self._days(session)
        yield self._open_exceptions(session)

    def _inbox(self, session: Session, now: datetime) -> Iterator[GaugeMetricFamily]:
        items = table_of(InboxItem)
        oldest = session.execute(
            select(func.min(items.c.received_at)).where(items.c.status == ItemStatus.PENDING.value)
        ).scalar_one_or_none()
        lag = GaugeMetricFamily(
            "pixrecon_inbox_oldest_pending_seconds",
            "Age of the oldest inbox item waiting for a worker (0 when none waits)",
        )
        lag.add_metric([], (now - as_utc(oldest)).total_seconds() if oldest else 0.0)
        yield lag
        # One index range count a status (ix_inbox_item_status_received).
        by_status = GaugeMetricFamily(
            "pixrecon_inbox_items_by_status",
            "Inbox items waiting (pending) or needing a person (failed, unsupported)",
            labels=["status"],
        )
        for status in WAITING_STATUSES:
            n = session.execute(
                select(func.count()).select_from(items).where(items.c.status == status.value)
            ).scalar_one()
            by_status.add_metric([status.value], int(n))
        yield by_status

    def _confirmation_backlog(self, session: Session) -> GaugeMetricFamily:
        backlog = GaugeMetricFamily(
            "pixrecon_confirmation_backlog",
            "Notified movements the provider's API has not yet confirmed, by subject",
            labels=["subject"],
        )
        for subject, model in CONFIRMED_SUBJECTS:
            table = table_of(model)
            n = session.execute(
                select(func.count())
                .select_from(table)
                .where(table.c.confirmation == Confirmation.PENDING.value)
            ).scalar_one()
            backlog.add_metric([subject], int(n))
        return backlog

    def _jobs(self, session: Session) -> Iterator[GaugeMetricFamily]:
        last_success = GaugeMetricFamily(
            "pixrecon_job_last_success_timestamp_seconds",
            "When each periodic job last succeeded (Unix time; absent: never)",
            labels=["job_name"],
        )
        failing = GaugeMetricFamily(
            "pixrecon_job_failing",
            "1 when the latest run of the periodic job failed (scheduled_job.last_error)",
            labels=["job_name"],
        )
        scheduled = set(job_intervals(self._settings)) | {"prune"}
        rows = {row.name: row for row in session.execute(select(ScheduledJob)).scalars()}
        for name in sorted(scheduled | set(rows)):
            row = rows.get(name)
            if row is not None and row.last_success_at is not None:
                last_success.add_metric([name], as_utc(row.last_success_at).timestamp())
            failing.add_metric([name], 1 if row is not None and row.last_error else 0)
        yield last_success
        yield failing

    def _days(self, session: Session) -> Iterator[GaugeMetricFamily]:
        """Days judged after they ended (the nightly run): what the day's verdict is. A
        run during the day (the workers' reconcile_today) is provisional — its statement
        is not complete yet — and would raise day alerts every afternoon."""
        runs = table_of(ReconciliationRun)
        last = business_today() - timedelta(days=1)
        first = last - timedelta(days=VERDICT_DAYS - 1)
        # The latest completed run of each day; kept only if it started after its day.
        newest = (
            select(func.max(runs.c.id))
            .where(
                runs.c.status == "completed",
                runs.c.business_date >= first,
                runs.c.business_date <= last,
            )
            .group_by(runs.c.business_date)
        )
        rows = [
            row
            for row in session.execute(
                select(runs.c.business_date, runs.c.started_at, runs.c.verdict, runs.c.report)
                .where(runs.c.id.in_(newest.scalar_subquery()))
                .order_by(runs.c.business_date)
            )
            if as_utc(row.started_at) >= business_day_bounds(row.business_date)[1]
        ]
        verdicts = GaugeMetricFamily(
            "pixrecon_day_verdict",
            f"1 for the verdict of each of the last {VERDICT_DAYS} business days before "
            "today, judged after the day ended (0 for the other verdicts); a day whose "
            "latest run is not such a run (no nightly run yet) is absent",
            labels=["day", "verdict"],
        )
        coverage = GaugeMetricFamily(
            "pixrecon_webhook_coverage_ratio",
            "Share of a day's movements (Pix received, refunds, payouts) that a webhook "
            "announced, the rest found only by polling; days judged after they ended",
            labels=["day"],
        )
        at_risk = GaugeMetricFamily(
            "pixrecon_med_at_risk_brl",
            "Money in MED infraction cases still open, in reais, as the latest completed "
            "run (the workers reconcile today every few minutes) saw it",
        )
        resolved = GaugeMetricFamily(
            "pixrecon_day_breaks_resolved",
            "1 for a judged day that breaks only by exceptions people have all resolved "
            "since (none remains and the bridge leaves nothing unexplained), else 0",
            labels=["day"],
        )
        cases = table_of(ExceptionCase)
        remaining = dict(
            session.execute(
                select(cases.c.business_date, func.count())
                .where(
                    cases.c.business_date.in_([row.business_date for row in rows]),
                    cases.c.state.in_([state.value for state in CaseState.remaining()]),
                )
                .group_by(cases.c.business_date)
            ).all()
        )
        for row in rows:
            day = row.business_date.isoformat()
            for verdict in DayVerdict:
                verdicts.add_metric([day, verdict.value], 1 if row.verdict == verdict else 0)
            report = json.loads(row.report) if row.report else {}
            # The verdict stays "breaks" (the sources disagree), but nothing is left to do.
            settled = (
                row.verdict == DayVerdict.BREAKS
                and bool(report.get("exceptions_found"))
                and not (report.get("bridge") or {}).get("residual_cents")
                and not remaining.get(row.business_date)
            )
            resolved.add_metric([day], 1 if settled else 0)
            share = webhook_coverage(report.get("counts"))["share"]
            if share is not None:
                coverage.add_metric([day], share)
        latest = session.execute(
            select(runs.c.report)
            .where(runs.c.status == "completed", runs.c.business_date <= business_today())
            .order_by(runs.c.business_date.desc(), runs.c.id.desc())
            .limit(1)
        ).scalar_one_or_none()
        med = json.loads(latest).get("med") if latest else None
        if isinstance(med, dict):
            at_risk.add_metric([], int(med.get("at_risk_cents") or 0) / 100)
        yield verdicts
        yield resolved
        yield coverage
        yield at_risk

    def _open_exceptions(self, session: Session) -> GaugeMetricFamily:
        cases, items = table_of(ExceptionCase), table_of(ReconciliationItem)
        # As the lists people work from rank it: today, so that an alert on priority 1
        # fires as money's last day to be refunded nears, not only on the day it came.
        priority = priority_as_of(items, business_today())
        rows = session.execute(
            select(cases.c.status, priority, func.count())
            .select_from(cases)
            .outerjoin(
                items,
                (items.c.run_id == cases.c.last_seen_run_id)
                & (items.c.subject == cases.c.subject)
                & (items.c.ref == cases.c.ref),
            )
            .where(cases.c.state.in_([state.value for state in CaseState.remaining()]))
            .group_by(cases.c.status, priority)
        ).all()
        family = GaugeMetricFamily(
            "pixrecon_open_exceptions",
            "Exception cases still to be dealt with (open or acknowledged), by status "
            "(docs/design.md §5) and priority (1 most urgent; 'none' when unranked)",
            labels=["status", "priority"],
        )
        for status, priority, n in rows:
            family.add_metric([status, str(priority) if priority is not None else "none"], n)
        return family
