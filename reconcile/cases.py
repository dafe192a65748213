"""Exception cases: what a run found that a person must look at. People acknowledge or
resolve cases with a note; resolved cases stay resolved when the day is reconciled again."""

from __future__ import annotations

from datetime import date
from typing import Any

from sqlalchemy import select
from sqlmodel import Session, col

from reconcile.models import CaseState, ExceptionCase
from reconcile.timeutil import as_utc, utcnow

# What a person may set; ``cleared`` is the runs' word alone.
SETTABLE = (CaseState.OPEN, CaseState.ACKNOWLEDGED, CaseState.RESOLVED)


class CaseNotFound(LookupError):
    pass


def list_cases(
    session: Session,
    *,
    day: date | None = None,
    states: tuple[CaseState, ...] = CaseState.remaining(),
) -> list[dict[str, Any]]:
    stmt = select(ExceptionCase).where(col(ExceptionCase.state).in_(states))
    if day is not None:
        stmt = stmt.where(col(ExceptionCase.business_date) == day)
    stmt = stmt.order_by(col(ExceptionCase.business_date), col(ExceptionCase.id))
    return [
        {
            "id": case.id,
            "date": case.business_date.isoformat(),
            "subject": case.subject,
            "ref": case.ref,
            "status": case.status,
            "state": case.state,
            "note": case.note,
            "updated_at": as_utc(case.updated_at).isoformat(),
        }
        for case in session.execute(stmt).scalars()
    ]


def set_state(session: Session, case_id: int, state: CaseState, note: str | None) -> ExceptionCase:
    if state not in SETTABLE:
        raise ValueError(f"a person can set open, acknowledged or resolved, not {state!r}")
    case = session.get(ExceptionCase, case_id)
    if case is None:
        raise CaseNotFound(case_id)
    case.state = state.value
    if note:
        case.note = note
    case.updated_at = utcnow()
    return case
