"""The exceptions workflow: people acknowledge or resolve cases with a note; resolved
cases stay resolved when the day is reconciled again."""

from __future__ import annotations

from datetime import date
from typing import Any

from sqlalchemy import select
from sqlmodel import Session, col

from reconcile.models import ExceptionCase
from reconcile.timeutil import as_utc, utcnow

STATES = ("open", "acknowledged", "resolved", "cleared")


class CaseNotFound(LookupError):
    pass


def list_cases(
    session: Session, *, day: date | None = None, states: tuple[str, ...] = ("open", "acknowledged")
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


def set_state(session: Session, case_id: int, state: str, note: str | None) -> ExceptionCase:
    if state not in ("acknowledged", "resolved", "open"):
        raise ValueError(f"a person can set open, acknowledged or resolved, not {state!r}")
    case = session.get(ExceptionCase, case_id)
    if case is None:
        raise CaseNotFound(case_id)
    case.state = state
    if note:
        case.note = note
    case.updated_at = utcnow()
    return case
