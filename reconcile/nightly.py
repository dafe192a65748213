"""Reconciling a whole business day: run every matcher in one transaction (on a big day
on PostgreSQL, the Pix received are matched in key ranges on connections of their own,
and the statement lines and the bridge's source figures are read on another, alongside
the other matchers: ``reconcile.matching.parallel``), keep the run and its verdicts, carry
exceptions over to the cases people work on, and answer with the day's verdict
(``reconcile.matching.judgement``), its bridge, a report and an exit code (0 reconciled;
1 breaks, or only pending items remain; 2 incomplete)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from functools import cached_property
from typing import Any

from sqlalchemy import Engine, case, delete, func, literal, select, text, update
from sqlmodel import Session, col

# The report's exceptions are the cases' rows: one column list for every listing.
from reconcile.cases import EXCEPTION_FIELDS as EXCEPTION_FIELDS
from reconcile.cases import case_rows, count_cases
from reconcile.db import dialect_of, insert_for, session_scope, table_of
from reconcile.matching.amount_due import flag_disagreeing_components, record_amounts_due
from reconcile.matching.automatico import (
    judge_missed_cycles,
    judge_notified_claims,
    judge_recurring_charges,
)
from reconcile.matching.bridge import (
    SourceFigures,
    day_bridge,
    flag_unexplained_differences,
    match_statement_lines,
    source_figures,
)
from reconcile.matching.charges import match_charges
from reconcile.matching.context import Judging, RunContext
from reconcile.matching.credits import match_notified_credits
from reconcile.matching.infractions import match_infractions, med_exposure
from reconcile.matching.judgement import (
    DayVerdict,
    Sources,
    annotate_pending,
    annotate_priorities,
    carried_items,
    incomplete_because,
    judge,
    pending_items,
)
from reconcile.matching.movements import is_big_day, match_received, match_refunds
from reconcile.matching.parallel import alongside
from reconcile.matching.payouts import match_payout_returns, match_payouts
from reconcile.matching.repeats import judge_conflicting_repeats
from reconcile.matching.totals import balance_drift
from reconcile.metrics import RECONCILIATION_RUNS
from reconcile.models import (
    CaseState,
    ExceptionCase,
    ReconciliationItem,
    ReconciliationRun,
    StatementEntry,
)
from reconcile.timeutil import business_day_bounds, utcnow

MATCHERS: list[tuple[str, Callable[[Session, RunContext], None]]] = [
    ("Pix received", match_received),
    ("refunds", match_refunds),
    ("charges", match_charges),
    ("Pix Automático", judge_recurring_charges),
    ("recurrence cycles", judge_missed_cycles),
    ("Pix Automático notifications", judge_notified_claims),
    ("amounts due", flag_disagreeing_components),
    ("payouts", match_payouts),
    ("payout returns", match_payout_returns),
    ("credits notified", match_notified_credits),
    ("infractions", match_infractions),
    ("conflicting repeats", judge_conflicting_repeats),
]
# Statement lines nobody explains, and the bridge's figures from the source tables: they
# read no verdict, so on a big day they run alongside the matchers after the first.
ALONGSIDE = "statement lines"
STEPS = (*(name for name, _ in MATCHERS), ALONGSIDE)
"""What ``on_step`` is told, in order."""
REMAINING = tuple(state.value for state in CaseState.remaining())


@dataclass(frozen=True)
class NightlyResult:
    run_id: int
    # What is stored with the run: every figure of the day, the open exceptions counted.
    summary: dict[str, Any]
    verdict: DayVerdict
    engine: Engine = field(repr=False, compare=False)

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code

    @property
    def day(self) -> date:
        return date.fromisoformat(self.summary["date"])

    def exceptions(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The day's open exceptions, most urgent first, as they stand now."""
        with session_scope(self.engine) as session:
            return case_rows(session, day=self.day, by_priority=True, limit=limit)

    @cached_property
    def report(self) -> dict[str, Any]:
        """The summary with every open exception listed: built on demand, in the process
        that asks, because a bad day has tens of thousands of them (``summary`` alone is
        what the run keeps)."""
        return {**self.summary, "exceptions": self.exceptions()}


def _statement_known(session: Session, day: date, date_lag: timedelta) -> bool:
    """Whether the statement has lines for the day — or within the date lag after it: a
    day whose only movement the provider booked just after midnight has its statement
    too (that line is carried out of it)."""
    start, end = business_day_bounds(day)
    found = session.execute(
        select(StatementEntry.id)  # type: ignore[call-overload]
        .where(
            col(StatementEntry.booked_at) >= start,
            col(StatementEntry.booked_at) < end + date_lag,
        )
        .limit(1)
    ).first()
    return found is not None


def _exceptions_found(session: Session, ctx: RunContext) -> int:
    """The run's exceptions, whatever people did with their cases since."""
    cases = table_of(ExceptionCase)
    found = session.execute(
        select(func.count()).where(
            cases.c.business_date == ctx.day, cases.c.last_seen_run_id == ctx.run_id
        )
    ).scalar_one()
    return int(found)


SUBJECTS = ("movement", "charge", "payout", "infraction", "statement")


def _tally(session: Session, run_id: int) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """Verdicts per subject and status, and how the day's movements reached pixrecon (see
    ``_deliveries``): one pass over the run, which has a verdict per movement."""
    items = table_of(ReconciliationItem)
    counts: dict[str, dict[str, int]] = {subject: {} for subject in SUBJECTS}
    by_source: dict[str | None, int] = {}
    duplicates = 0
    for subject, status, source, n, repeated in session.execute(
        select(
            items.c.subject,
            items.c.status,
            items.c.source,
            func.count(),
            func.sum(items.c.duplicate_webhooks),
        )
        .where(items.c.run_id == run_id)
        .group_by(items.c.subject, items.c.status, items.c.source)
    ):
        found = counts.setdefault(subject, {})
        found[status] = found.get(status, 0) + int(n)
        if subject == "movement":
            by_source[source] = by_source.get(source, 0) + int(n)
            duplicates += int(repeated or 0)
    return counts, _deliveries(by_source, duplicates)


def _deliveries(by_source: dict[str | None, int], duplicates: int) -> dict[str, int]:
    """How the day's movements (Pix received, refunds, payout returns) reached pixrecon:
    by webhook, only by polling, only in the statement; and repeated webhooks (counted, no
    effect). Delivery facts, not money."""
    return {
        "by_webhook": by_source.get("webhook", 0) + by_source.get("both", 0),
        "found_only_by_polling": by_source.get("poll", 0),
        "only_in_statement": by_source.get("statement", 0),
        "duplicate_webhooks": duplicates,
    }


# What a case keeps of the latest run that raised it (``ExceptionCase``).
KEPT = ("reason", "expected_cents", "actual_cents")


def _sync_cases(session: Session, ctx: RunContext) -> None:
    """Exceptions of this run become (or stay) cases; a resolved case stays resolved; a
    case that no longer shows up is cleared."""
    items, cases = table_of(ReconciliationItem), table_of(ExceptionCase)
    insert = insert_for(dialect_of(session))
    found = select(
        literal(ctx.day, cases.c.business_date.type),
        items.c.subject,
        items.c.ref,
        items.c.status,
        literal(CaseState.OPEN.value, cases.c.state.type),
        literal(ctx.run_id, cases.c.first_seen_run_id.type),
        literal(ctx.run_id, cases.c.last_seen_run_id.type),
        literal(ctx.now, cases.c.updated_at.type),
        items.c.reason,
        items.c.expected_cents,
        items.c.actual_cents,
    ).where(items.c.run_id == ctx.run_id, items.c.exception)
    stmt = insert(cases).from_select(
        [
            "business_date",
            "subject",
            "ref",
            "status",
            "state",
            "first_seen_run_id",
            "last_seen_run_id",
            "updated_at",
            *KEPT,
        ],
        found,
    )
    session.execute(
        stmt.on_conflict_do_update(
            index_elements=[cases.c.business_date, cases.c.subject, cases.c.ref, cases.c.status],
            set_={
                "last_seen_run_id": stmt.excluded.last_seen_run_id,
                **{name: stmt.excluded[name] for name in KEPT},
                # Back again after being cleared: open again. Resolved stays resolved.
                "state": case(
                    (cases.c.state == CaseState.CLEARED.value, CaseState.OPEN.value),
                    else_=cases.c.state,
                ),
            },
        )
    )
    session.execute(
        update(cases)
        .where(
            cases.c.business_date == ctx.day,
            cases.c.last_seen_run_id != ctx.run_id,
            cases.c.state.in_(REMAINING),
        )
        .values(state=CaseState.CLEARED.value, updated_at=ctx.now)
    )


def _statement_side(session: Session, ctx: RunContext) -> SourceFigures:
    match_statement_lines(session, ctx)
    return source_figures(session, ctx)


def _totals(bridge: dict[str, Any]) -> dict[str, Any]:
    """Per source, like for like: each row compares figures of the same movements."""
    rows = {row["category"]: row for row in bridge["categories"]}

    def of(category: str) -> dict[str, Any]:
        row: dict[str, Any] = rows[category]
        return row

    def sources(category: str) -> dict[str, int]:
        row = of(category)
        return {
            "webhook": row["webhook_cents"],
            "api": row["api_cents"],
            "statement": row["statement_cents"],
        }

    return {
        "credits": sources("pix_received"),
        "debits": sources("payouts"),
        "refunds": sources("refunds_sent"),
        "fees": {"statement": of("fees")["statement_cents"]},
        "med_debits": sources("med_debits"),
    }


def reconcile_day(
    engine: Engine,
    day: date,
    *,
    now: datetime | None = None,
    on_step: Callable[[str], object] | None = None,
    judging: Judging | None = None,
    sources: Sources | None = None,
) -> NightlyResult:
    """Judge ``day`` as of its end (or ``now``, if it is not over). ``sources`` says what
    could be read: without it every source is taken as configured and read."""
    now = now or utcnow()
    read = sources or Sources()

    def step(name: str) -> None:
        if on_step is not None:
            on_step(name)

    with session_scope(engine) as session:
        # A run that never finished (the process died) is marked so; re-running is safe
        # because every run writes only its own rows.
        session.execute(
            update(ReconciliationRun)
            .where(
                col(ReconciliationRun.business_date) == day,
                col(ReconciliationRun.status) == "running",
            )
            .values(status="failed", finished_at=now)
        )
        run = ReconciliationRun(business_date=day, started_at=now)
        session.add(run)
        session.flush()
        assert run.id is not None
        run_id = run.id
    try:
        with session_scope(engine) as session:
            if dialect_of(session) == "postgresql":
                # JIT-compiling each big statement costs more than it saves here (measured
                # with benchmarks/nightly.py): the statements are few and run once.
                session.execute(text("SET LOCAL jit = off"))
            rules = judging or Judging()
            ctx = RunContext.for_day(
                run_id,
                day,
                now,
                # A statement read over the day that holds none of its lines says the
                # provider booked nothing on it: each movement of the day is then a break
                # (or pending within the date lag), not a source missing.
                read.statement_read or _statement_known(session, day, rules.date_lag),
                rules,
            )
            ctx = replace(ctx, parallel=is_big_day(session, ctx))
            # What each due-date charge paid today owed on the day it was paid.
            record_amounts_due(session, ctx.start, ctx.end)
            (first, match_first), *others = MATCHERS
            step(first)
            match_first(session, ctx)
            with alongside(session, ctx.parallel, lambda own: _statement_side(own, ctx)) as side:
                for name, matcher in others:
                    step(name)
                    matcher(session, ctx)
                step(ALONGSIDE)
                figures = side.result()
            if dialect_of(session) == "postgresql":
                # The run's verdicts were just written (up to millions of rows): without fresh
                # statistics the planner walks whole indexes for the report's few rows.
                session.execute(text("ANALYZE reconciliation_item"))
            annotate_pending(session, ctx)
            annotate_priorities(session, ctx)
            drift = balance_drift(session, ctx)
            bridge = day_bridge(session, ctx, drift, figures)
            flag_unexplained_differences(session, ctx, bridge)
            _sync_cases(session, ctx)
            open_exceptions = count_cases(session, day)
            # The day's answer is what the sources say: a case a person resolved is
            # explained, not agreement, and the verdict must read the same after it.
            found = _exceptions_found(session, ctx)
            counts, deliveries = _tally(session, run_id)
            pending = pending_items(session, ctx)
            incomplete = incomplete_because(
                session,
                ctx,
                read,
                has_items=any(any(c.values()) for c in counts.values()),
                balance_known=bridge["residual_cents"] is not None,
            )
            verdict = judge(
                incomplete=incomplete,
                exceptions=found,
                residual=bridge["residual_cents"],
                pending=sum(c.get("pending", 0) for c in counts.values()),
            )
            movements = {**counts["movement"], "duplicate": deliveries["duplicate_webhooks"]}
            report: dict[str, Any] = {
                "date": day.isoformat(),
                "run_id": run_id,
                "verdict": verdict.value,
                "exit_code": verdict.exit_code,
                "as_of": ctx.as_of.isoformat(),
                # Judged before the day ended: the same run later may answer otherwise.
                "provisional": ctx.as_of < ctx.end,
                "incomplete_because": incomplete,
                "counts": movements,
                "deliveries": deliveries,
                "charges": counts["charge"],
                "payouts": counts["payout"],
                "infractions": counts["infraction"],
                "statement": counts["statement"],
                "med": med_exposure(session, ctx),
                "totals": _totals(bridge),
                "bridge": bridge,
                "balance_drift_cents": drift["drift_cents"],
                "balance": drift,
                "pending": pending,
                "carried_in": carried_items(session, ctx, "in"),
                "carried_out": carried_items(session, ctx, "out"),
                "open_exceptions": open_exceptions,
                "exceptions_found": found,
            }
            session.execute(
                update(ReconciliationRun)
                .where(col(ReconciliationRun.id) == run_id)
                .values(
                    status="completed",
                    finished_at=utcnow(),
                    exit_code=verdict.exit_code,
                    verdict=verdict.value,
                    report=json.dumps(report),
                )
            )
    except BaseException:
        # Ctrl-C too: a run left ``running`` would keep what its parallel connections
        # committed, and a run cut short concludes nothing.
        with session_scope(engine) as session:
            session.execute(
                update(ReconciliationRun)
                .where(col(ReconciliationRun.id) == run_id)
                .values(status="failed", finished_at=utcnow(), exit_code=2)
            )
            # Verdicts written on connections of their own (reconcile.matching.parallel)
            # were committed before the failure: a failed run keeps none.
            items = table_of(ReconciliationItem)
            session.execute(delete(items).where(items.c.run_id == run_id))
        raise
    RECONCILIATION_RUNS.labels(verdict.value).inc()
    _prune_earlier_runs(engine, day, run_id)
    return NightlyResult(run_id=run_id, summary=report, verdict=verdict, engine=engine)


def _prune_earlier_runs(engine: Engine, day: date, run_id: int) -> None:
    """Keep the verdicts of the newest run only (the runs and their reports stay): the
    worker reconciles today every few minutes, and a day has up to millions of items."""
    items, runs = table_of(ReconciliationItem), table_of(ReconciliationRun)
    earlier = select(runs.c.id).where(runs.c.business_date == day, runs.c.id < run_id)
    with session_scope(engine) as session:
        session.execute(delete(items).where(items.c.run_id.in_(earlier.scalar_subquery())))
