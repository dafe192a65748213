"""One exception case in full, as a person working it reads it: what its day's latest run
said of it, what to do, the notifications and the statement line that decided it, and who
acted on it. The dashboard's case page and ``pixrecon exceptions show`` both read it here,
so the two never tell a case differently."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import select
from sqlmodel import Session, col

from reconcile.cases import case_events, case_rows, med_deadline_passed
from reconcile.db import table_of
from reconcile.masking import mask_payload, mask_text
from reconcile.matching.automatico import CYCLE_NAMES, REC_STATES, in_words
from reconcile.models import (
    CaseState,
    ExceptionCase,
    InboxItem,
    ReconciliationItem,
    ReconciliationRun,
    Recurrence,
    StatementEntry,
)
from reconcile.queries import deliveries_of, inbox_item_view, items_by_ref
from reconcile.timeutil import business_today

COMPLETED = "completed"


@dataclass(frozen=True)
class Run:
    id: int
    business_date: date
    finished_at: datetime | None
    verdict: str | None


def latest_run(session: Session, day: date) -> Run | None:
    """The day's answer: its latest completed run (docs/dashboards.md, ``v_latest_run``)."""
    runs = table_of(ReconciliationRun)
    row = session.execute(
        select(runs.c.id, runs.c.business_date, runs.c.finished_at, runs.c.verdict)
        .where(runs.c.business_date == day, runs.c.status == COMPLETED)
        .order_by(runs.c.id.desc())
        .limit(1)
    ).first()
    return Run(row.id, row.business_date, row.finished_at, row.verdict) if row else None


def verdict_of(session: Session, case: ExceptionCase, run_id: int) -> ReconciliationItem | None:
    """The verdict of ``run_id`` that raised the case (none once the case is cleared)."""
    stmt = select(ReconciliationItem).where(
        col(ReconciliationItem.run_id) == run_id,
        col(ReconciliationItem.subject) == case.subject,
        col(ReconciliationItem.ref) == case.ref,
        col(ReconciliationItem.status) == case.status,
    )
    return session.execute(stmt).scalars().first()


def _bare_ref(subject: str, ref: str) -> str:
    """A charge's case is ``cob:{txid}``, a recurrence's ``rec:{idRec}[:{cycle}]``; their
    items carry the txid or idRec alone."""
    if subject == "charge" and ":" in ref:
        return ref.split(":", 1)[1]
    if subject == "recurrence" and ref.count(":") >= 1:
        return ref.split(":")[1]
    return ref


def _missed_cycle(session: Session, case: ExceptionCase) -> dict[str, Any] | None:
    """What decides a missed cycle: the recurrence as the provider's API states it, and
    the cycle no recurring charge falls within — no notification."""
    _, id_rec, due = case.ref.split(":", 2)
    rec = session.execute(
        select(Recurrence).where(col(Recurrence.id_rec) == id_rec)
    ).scalar_one_or_none()
    if rec is None:
        return None
    stated = rec.confirmed_status
    return {
        "id_rec": id_rec,
        "due": date.fromisoformat(due),
        "periodicity": CYCLE_NAMES.get(rec.periodicity or "", rec.periodicity),
        "amount_cents": rec.amount_cents,
        "stated": in_words(REC_STATES, stated) if stated else None,
        "stated_at": rec.confirmed_status_at,
    }


def _decimal(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    raise TypeError(type(value).__name__)


def masked_json(text: str) -> str:
    try:
        parsed = json.loads(text, parse_float=Decimal)
    except ValueError:
        return mask_text(text)
    return json.dumps(mask_payload(parsed), indent=2, ensure_ascii=False, default=_decimal)


def case_detail(session: Session, case_id: int) -> dict[str, Any] | None:
    """Everything known of one case (None when there is no such case): ``described`` is
    the case as the exceptions list gives it, as of today; ``items`` the inbox items that
    decided it (``decided``) and the others carrying its reference."""
    case = session.get(ExceptionCase, case_id)
    if case is None:
        return None
    run = latest_run(session, case.business_date)
    verdict: ReconciliationItem | None = None
    if run is not None:
        verdict = verdict_of(session, case, run.id)
    decided: list[InboxItem] = []
    missed = verdict is not None and verdict.status == "missed_cycle"
    # A run before missed cycles named no notification may still point at one.
    if verdict is not None and verdict.inbox_item_id is not None and not missed:
        item = session.get(InboxItem, verdict.inbox_item_id)
        decided = [item] if item is not None else []
    related = [
        item
        for item in items_by_ref(session, _bare_ref(case.subject, case.ref), limit=20)
        if item.id not in {d.id for d in decided}
    ]
    items = decided + related
    deliveries = deliveries_of(session, [item.id for item in items if item.id is not None])
    statement = (
        session.get(StatementEntry, verdict.statement_entry_id)
        if verdict is not None and verdict.statement_entry_id is not None
        else None
    )
    now = business_today()
    described = case_rows(session, case_ids=[case_id], states=tuple(CaseState), as_of=now)
    row = described[0] if described else None
    deadline = row["med_deadline_at"] if row is not None else None
    return {
        "today": now,
        "case": case,
        "run": run,
        "verdict": verdict,
        "described": row,
        "med_deadline_passed": med_deadline_passed(deadline, now),
        "events": case_events(session, case_id),
        "items": [
            {
                **inbox_item_view(item),
                "decided": item in decided,
                "payload": masked_json(item.payload),
                "deliveries": deliveries.get(item.id or 0, []),
            }
            for item in items
        ],
        "statement": statement,
        "cycle": _missed_cycle(session, case) if missed else None,
    }
