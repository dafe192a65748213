"""Exception cases: what a run found that a person must look at. People acknowledge or
resolve cases with a note; resolved cases stay resolved when the day is reconciled again.

Every such action is recorded in ``case_event`` (append-only) by ``set_state`` itself, so
the command line and the dashboard leave the same audit trail whoever calls it."""

from __future__ import annotations

import getpass
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import date, datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Date,
    Integer,
    Row,
    Table,
    and_,
    case,
    func,
    literal,
    select,
)
from sqlmodel import Session, col

from reconcile.actions import differs, suggested_action
from reconcile.db import table_of
from reconcile.masking import mask_text
from reconcile.models import (
    OPEN_INFRACTION_STATES,
    CaseEvent,
    CaseState,
    ExceptionCase,
    Infraction,
    ReconciliationItem,
    UtcDateTime,
)
from reconcile.priorities import URGENT_PRIORITY, med_urgent_before, urgent_from
from reconcile.references import REFERENCE_FIELDS, MedTerms, add_references, med_terms
from reconcile.settings import get_settings
from reconcile.timeutil import BUSINESS_TZ, as_utc, utcnow

# What a person may set; ``cleared`` is the runs' word alone.
SETTABLE = (CaseState.OPEN, CaseState.ACKNOWLEDGED, CaseState.RESOLVED)
ACTIONS = {
    CaseState.OPEN: "reopen",
    CaseState.ACKNOWLEDGED: "acknowledge",
    CaseState.RESOLVED: "resolve",
}
REOPEN = ACTIONS[CaseState.OPEN]
# The states a person's action applies to, as the dashboard offers them: a stale page or
# a double click must not resolve a case twice, or acknowledge one someone else resolved.
APPLIES_TO = {
    CaseState.OPEN: (CaseState.RESOLVED.value, CaseState.CLEARED.value),
    CaseState.ACKNOWLEDGED: (CaseState.OPEN.value, CaseState.ACKNOWLEDGED.value),
    CaseState.RESOLVED: (CaseState.OPEN.value, CaseState.ACKNOWLEDGED.value),
}
CLOSED_STATES = (CaseState.RESOLVED.value, CaseState.CLEARED.value)
NOTE_MAX_LENGTH = 2000
ACTOR_MAX_LENGTH = 100


# How a case stands across business days. ``new``: no earlier day had it; ``persisting``:
# an earlier day's run found the same subject and reference too (and that case was not
# cleared by a later run of its day); ``resolved``: a person resolved it, or a later run of
# its day no longer finds it. Judged from business days, never from runs or the clock, so
# re-running a day, today or next month, gives the same word.
LIFECYCLE_NEW, LIFECYCLE_PERSISTING, LIFECYCLE_RESOLVED = "new", "persisting", "resolved"
CHUNK = 500
# Case rows described (references looked up) per round trip of a listing.
ROWS_PER_CHUNK = 2000


class CaseNotFound(LookupError):
    pass


class NoteRequired(ValueError):
    """Resolving says how the case was resolved: a later reader has only the note."""


class CaseChanged(Exception):
    """The case is not in a state the action was chosen for (someone acted on it since
    the page was shown); nothing was changed."""

    def __init__(self, case_id: int, state: str) -> None:
        super().__init__(f"exception case {case_id} is {state} now")
        self.case_id = case_id
        self.state = state


def command_line_actor() -> str:
    """Who runs the command, as the operating system knows them."""
    try:
        user = getpass.getuser()
    except (OSError, KeyError):
        # A container may run under a uid with no name at all.
        user = "unknown"
    return f"cli:{user}"[:ACTOR_MAX_LENGTH]


def first_seen(
    session: Session, day: date, keys: Iterable[tuple[str, str]]
) -> dict[tuple[str, str], date]:
    """The earliest business day before ``day`` whose run raised a case about each
    ``(subject, ref)``; absent when none did."""
    cases = table_of(ExceptionCase)
    wanted = sorted(set(keys))
    found: dict[tuple[str, str], date] = {}
    for start in range(0, len(wanted), CHUNK):
        chunk = wanted[start : start + CHUNK]
        stmt = (
            select(cases.c.subject, cases.c.ref, func.min(cases.c.business_date))
            .where(
                cases.c.business_date < day,
                cases.c.state != CaseState.CLEARED.value,
                cases.c.ref.in_({ref for _, ref in chunk}),
            )
            .group_by(cases.c.subject, cases.c.ref)
        )
        asked = set(chunk)
        for subject, ref, earliest in session.execute(stmt):
            if (subject, ref) in asked:
                found[(subject, ref)] = earliest
    return found


def lifecycle_of(state: str, earlier: date | None) -> str:
    if state in (CaseState.RESOLVED.value, CaseState.CLEARED.value):
        return LIFECYCLE_RESOLVED
    return LIFECYCLE_PERSISTING if earlier is not None else LIFECYCLE_NEW


def _lifecycle(state: str, day: date, earlier: date | None, as_of: date | None) -> dict[str, Any]:
    seen = earlier or day
    return {
        "lifecycle": lifecycle_of(state, earlier),
        "first_seen": seen.isoformat(),
        "age_days": ((as_of or day) - seen).days,
    }


def add_lifecycle(
    session: Session, rows: list[dict[str, Any]], *, as_of: date | None = None
) -> None:
    """Fill ``lifecycle``, ``first_seen`` (ISO date) and ``age_days`` of case rows (keys
    ``date``, ``subject``, ``ref``, ``state``). Age counts business days' dates from the
    first day the problem was seen to ``as_of`` — the row's own day unless given, so a
    day's report reads the same whenever it is asked."""
    by_day: dict[date, list[dict[str, Any]]] = {}
    for row in rows:
        by_day.setdefault(date.fromisoformat(row["date"]), []).append(row)
    for day, group in by_day.items():
        earlier = first_seen(session, day, ((r["subject"], r["ref"]) for r in group))
        for row in group:
            since = earlier.get((row["subject"], row["ref"]))
            row.update(_lifecycle(row["state"], day, since, as_of))


def priority_as_of(items: Table, today: date) -> ColumnElement[int]:
    """A verdict's priority for a person working on it ``today``: the run judged it as of
    its day, when money's last day to go back may have been far; a case still open comes
    first once that day is near (``PIXRECON_REFUND_WARNING_DAYS``) or past. So does a MED
    case still open at the provider whose analysis deadline is near
    (``reconcile.priorities.MED_WARNING_DAYS``) or past."""
    near = urgent_from(today, get_settings().refund_warning_days)
    med = table_of(Infraction)
    med_near = (
        select(med.c.infraction_id)
        .where(
            med.c.infraction_id == items.c.ref,
            med.c.status.in_(OPEN_INFRACTION_STATES),
            med.c.deadline_at < literal(med_urgent_before(today), UtcDateTime),
        )
        .exists()
    )
    return case(
        (items.c.refund_by <= literal(near, Date), literal(URGENT_PRIORITY, Integer)),
        (
            and_(items.c.subject == "infraction", items.c.status == "open_case", med_near),
            literal(URGENT_PRIORITY, Integer),
        ),
        else_=items.c.priority,
    )


# What every listing of cases says of each (the report's exceptions, ``pixrecon
# exceptions``, the exports), in this order.
EXCEPTION_FIELDS = (
    "case_id",
    "date",
    "subject",
    "ref",
    "status",
    "state",
    "lifecycle",
    "first_seen",
    "age_days",
    "priority",
    "reason",
    "expected_cents",
    "actual_cents",
    "differs",
    "refund_by",
    "action",
    *REFERENCE_FIELDS,
    "note",
    # Added after the others: files and scripts read columns where they always were.
    "med_deadline_at",
)


def count_cases(
    session: Session, day: date, states: tuple[CaseState, ...] = CaseState.remaining()
) -> int:
    cases = table_of(ExceptionCase)
    found = session.execute(
        select(func.count())
        .select_from(cases)
        .where(cases.c.business_date == day, cases.c.state.in_([s.value for s in states]))
    ).scalar_one()
    return int(found)


def case_rows(
    session: Session,
    *,
    day: date | None = None,
    states: tuple[CaseState, ...] = CaseState.remaining(),
    as_of: date | None = None,
    by_priority: bool = False,
    case_ids: list[int] | None = None,
    run_id: int | None = None,
    limit: int | None = None,
    or_changed_since: datetime | None = None,
) -> list[dict[str, Any]]:
    """Cases with what their latest run said of them (amounts, reason, priority), what to
    do, the references a person knows them by and their lifecycle. Ages count to
    ``as_of``, else to each case's own day."""
    return list(
        iter_case_rows(
            session,
            day=day,
            states=states,
            as_of=as_of,
            by_priority=by_priority,
            case_ids=case_ids,
            run_id=run_id,
            limit=limit,
            or_changed_since=or_changed_since,
        )
    )


def iter_case_rows(
    session: Session,
    *,
    day: date | None = None,
    states: tuple[CaseState, ...] = CaseState.remaining(),
    as_of: date | None = None,
    by_priority: bool = False,
    case_ids: list[int] | None = None,
    run_id: int | None = None,
    limit: int | None = None,
    or_changed_since: datetime | None = None,
) -> Iterator[dict[str, Any]]:
    """``case_rows`` a chunk at a time, for listings of any size: a bad day has tens of
    thousands of cases, and only one chunk of them (with its references) is held at once.
    ``run_id``: only the cases that run raised. ``or_changed_since``: also the cases in
    any other state that people changed since then (resolved after the run, say)."""
    cases, items = table_of(ExceptionCase), table_of(ReconciliationItem)
    priority = items.c.priority if as_of is None else priority_as_of(items, as_of)
    earlier = cases.alias("earlier")
    # One index probe a case (``ix_exception_case_subject_ref``), even for tens of
    # thousands of cases in one report.
    seen_before = (
        select(func.min(earlier.c.business_date))
        .where(
            earlier.c.subject == cases.c.subject,
            earlier.c.ref == cases.c.ref,
            earlier.c.business_date < cases.c.business_date,
            earlier.c.state != CaseState.CLEARED.value,
        )
        .scalar_subquery()
    )
    stmt = (
        select(
            seen_before.label("seen_before"),
            cases.c.id,
            cases.c.business_date,
            cases.c.subject,
            cases.c.ref,
            cases.c.status,
            cases.c.state,
            cases.c.note,
            # A case its latest run cleared has no verdict there: what it last said.
            func.coalesce(items.c.reason, cases.c.reason).label("reason"),
            func.coalesce(items.c.expected_cents, cases.c.expected_cents).label("expected_cents"),
            func.coalesce(items.c.actual_cents, cases.c.actual_cents).label("actual_cents"),
            priority.label("priority"),
            items.c.refund_by,
            items.c.statement_entry_id,
        )
        # The case's latest run keeps its verdicts (earlier runs' are pruned); a case that
        # run cleared may have lost them, and says what the case kept of them.
        .outerjoin(
            items,
            (items.c.run_id == cases.c.last_seen_run_id)
            & (items.c.subject == cases.c.subject)
            & (items.c.ref == cases.c.ref),
        )
    )
    wanted: ColumnElement[bool] = cases.c.state.in_([state.value for state in states])
    if or_changed_since is not None:
        wanted = wanted | (cases.c.updated_at >= or_changed_since)
    stmt = stmt.where(wanted)
    if day is not None:
        stmt = stmt.where(cases.c.business_date == day)
    if case_ids is not None:
        stmt = stmt.where(cases.c.id.in_(case_ids))
    if run_id is not None:
        stmt = stmt.where(cases.c.last_seen_run_id == run_id)
    if by_priority:
        # As the dashboard's work queue: the most urgent, then the most money, first.
        amount = func.coalesce(items.c.actual_cents, items.c.expected_cents, 0)
        stmt = stmt.order_by(
            priority, amount.desc(), cases.c.business_date, cases.c.subject, cases.c.ref
        )
    else:
        stmt = stmt.order_by(cases.c.business_date, cases.c.id)
    if limit is not None:
        stmt = stmt.limit(limit)
    # A bad day has tens of thousands of cases saying the same few things: one string
    # object for each repeated text, not one a row (measured: a third of the run's peak).
    shared: dict[str, str] = {}

    def one(text: str | None) -> str | None:
        return None if text is None else shared.setdefault(text, text)

    result = session.execute(stmt.execution_options(yield_per=ROWS_PER_CHUNK))
    for chunk in result.partitions():
        yield from _described(session, chunk, as_of, one)


def med_deadline(status: str, med: MedTerms | None) -> datetime | None:
    """An open MED case's analysis deadline, as ``refund_by`` is money's last day: the
    instant finance answers the case by. Only an open case has one to act on."""
    if med is None or status != "open_case":
        return None
    return med.deadline_at


def med_deadline_passed(deadline: str | datetime | None, today: date) -> bool:
    """Whether the time to answer a MED case is over on ``today``: as what to do about it
    says (``reconcile.actions``), once the São Paulo day of its deadline has gone by."""
    if deadline is None:
        return False
    instant = datetime.fromisoformat(deadline) if isinstance(deadline, str) else deadline
    return today > as_utc(instant).astimezone(BUSINESS_TZ).date()


def _described(
    session: Session,
    chunk: Sequence[Row[Any]],
    as_of: date | None,
    one: Callable[[str | None], str | None],
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    entries: list[int | None] = []
    terms = med_terms(session, ({"subject": row.subject, "ref": row.ref} for row in chunk))
    for row in chunk:
        seen = _lifecycle(row.state, row.business_date, row.seen_before, as_of)
        med = terms.get(row.ref) if row.subject == "infraction" else None
        deadline = med_deadline(row.status, med)
        described = {
            "case_id": row.id,
            "date": one(row.business_date.isoformat()),
            "subject": one(row.subject),
            "ref": row.ref,
            "status": one(row.status),
            "state": one(row.state),
            **seen,
            "first_seen": one(seen["first_seen"]),
            "priority": row.priority,
            "reason": one(row.reason),
            "expected_cents": row.expected_cents,
            "actual_cents": row.actual_cents,
            "differs": differs(row.status),
            "refund_by": one(row.refund_by.isoformat()) if row.refund_by is not None else None,
            "action": one(
                suggested_action(
                    row.subject,
                    row.status,
                    row.expected_cents,
                    row.actual_cents,
                    row.refund_by,
                    ref=row.ref,
                    today=as_of,
                    deadline=med.deadline_at if med is not None else None,
                    reason=row.reason,
                    blocked=med.blocked_cents if med is not None else None,
                )
            ),
            **dict.fromkeys(REFERENCE_FIELDS),
            # Free text a person typed: a CPF or CNPJ in it is masked wherever it is shown.
            "note": None if row.note is None else mask_text(row.note),
            "med_deadline_at": deadline.isoformat() if deadline is not None else None,
        }
        rows.append(described)
        entries.append(row.statement_entry_id)
    add_references(session, rows, entries)
    return rows


def set_state(
    session: Session,
    case_id: int,
    state: CaseState,
    note: str | None,
    *,
    actor: str | None = None,
    expect: Iterable[str] | None = None,
) -> ExceptionCase:
    """Set a case's state and record who did it (``actor``; by default the operating-system
    user, ``cli:<name>``) with the note, in the caller's transaction: the change and its
    audit row commit together or not at all. ``expect``: the states the case must still be
    in (row locked), else ``CaseChanged`` and nothing changes."""
    if state not in SETTABLE:
        raise ValueError(f"a person can set open, acknowledged or resolved, not {state!r}")
    # Stored masked: the case tables are what BI tools are granted (docs/dashboards.md),
    # and a CPF typed into a note must not reach them.
    note = mask_text((note or "").strip()) or None
    if state == CaseState.RESOLVED and note is None:
        raise NoteRequired("resolving a case needs a note saying how it was resolved")
    if note is not None and len(note) > NOTE_MAX_LENGTH:
        raise ValueError(f"a note has at most {NOTE_MAX_LENGTH} characters")
    found = session.get(ExceptionCase, case_id, with_for_update=expect is not None)
    if found is None:
        raise CaseNotFound(case_id)
    if expect is not None and found.state not in set(expect):
        raise CaseChanged(case_id, found.state)
    now = utcnow()
    session.add(
        CaseEvent(
            case_id=case_id,
            # A closed case put back among the remaining ones is reopened, whatever state
            # it is given: the audit must say so, as the dashboard's reopen does.
            action=REOPEN
            if found.state in CLOSED_STATES and state != CaseState.RESOLVED
            else ACTIONS[state],
            actor=(actor or command_line_actor())[:ACTOR_MAX_LENGTH],
            note=note,
            previous_state=found.state,
            at=now,
        )
    )
    # A case leaving resolved or cleared must not go on showing how it was resolved.
    if note or found.state in CLOSED_STATES:
        found.note = note
    found.state = state.value
    found.updated_at = now
    return found


def case_events(session: Session, case_id: int) -> list[CaseEvent]:
    """A case's history, oldest first."""
    stmt = (
        select(CaseEvent)
        .where(col(CaseEvent.case_id) == case_id)
        .order_by(col(CaseEvent.at), col(CaseEvent.id))
    )
    return list(session.execute(stmt).scalars())
