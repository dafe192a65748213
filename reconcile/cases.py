"""Exception cases: what a run found that a person must look at. People acknowledge or
resolve cases with a note; resolved cases stay resolved when the day is reconciled again.

Every such action is recorded in ``case_event`` (append-only) by ``set_state`` itself, so
the command line and the dashboard leave the same audit trail whoever calls it."""

from __future__ import annotations

import getpass
from datetime import date
from typing import Any

from sqlalchemy import select
from sqlmodel import Session, col

from reconcile.models import CaseEvent, CaseState, ExceptionCase
from reconcile.timeutil import as_utc, utcnow

# What a person may set; ``cleared`` is the runs' word alone.
SETTABLE = (CaseState.OPEN, CaseState.ACKNOWLEDGED, CaseState.RESOLVED)
ACTIONS = {
    CaseState.OPEN: "reopen",
    CaseState.ACKNOWLEDGED: "acknowledge",
    CaseState.RESOLVED: "resolve",
}
NOTE_MAX_LENGTH = 2000
ACTOR_MAX_LENGTH = 100


class CaseNotFound(LookupError):
    pass


class NoteRequired(ValueError):
    """Resolving says how the case was resolved: a later reader has only the note."""


def command_line_actor() -> str:
    """Who runs the command, as the operating system knows them."""
    try:
        user = getpass.getuser()
    except (OSError, KeyError):
        # A container may run under a uid with no name at all.
        user = "unknown"
    return f"cli:{user}"[:ACTOR_MAX_LENGTH]


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


def set_state(
    session: Session,
    case_id: int,
    state: CaseState,
    note: str | None,
    *,
    actor: str | None = None,
) -> ExceptionCase:
    """Set a case's state and record who did it (``actor``; by default the operating-system
    user, ``cli:<name>``) with the note, in the caller's transaction: the change and its
    audit row commit together or not at all."""
    if state not in SETTABLE:
        raise ValueError(f"a person can set open, acknowledged or resolved, not {state!r}")
    note = (note or "").strip() or None
    if state == CaseState.RESOLVED and note is None:
        raise NoteRequired("resolving a case needs a note saying how it was resolved")
    if note is not None and len(note) > NOTE_MAX_LENGTH:
        raise ValueError(f"a note has at most {NOTE_MAX_LENGTH} characters")
    case = session.get(ExceptionCase, case_id)
    if case is None:
        raise CaseNotFound(case_id)
    now = utcnow()
    session.add(
        CaseEvent(
            case_id=case_id,
            action=ACTIONS[state],
            actor=(actor or command_line_actor())[:ACTOR_MAX_LENGTH],
            note=note,
            previous_state=case.state,
            at=now,
        )
    )
    case.state = state.value
    if note:
        case.note = note
    case.updated_at = now
    return case


def case_events(session: Session, case_id: int) -> list[CaseEvent]:
    """A case's history, oldest first."""
    stmt = (
        select(CaseEvent)
        .where(col(CaseEvent.case_id) == case_id)
        .order_by(col(CaseEvent.at), col(CaseEvent.id))
    )
    return list(session.execute(stmt).scalars())
