"""``pixrecon exceptions``: the cases people work on — list, one in full (``show``),
acknowledge, resolve, and who did what to each (``history``)."""

from __future__ import annotations

import json
import sys
from datetime import date
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from sqlalchemy import Engine
from sqlmodel import Session

from pixrecon.case_view import history_table, print_case, shown_case
from pixrecon.commands.common import (
    FormatOption,
    OutputFormat,
    console,
    database_or_exit,
    day_option,
    fail,
    known_id,
    say,
)
from pixrecon.report import exceptions_table
from reconcile.case_detail import case_detail
from reconcile.cases import (
    APPLIES_TO,
    CaseChanged,
    CaseNotFound,
    NoteRequired,
    case_events,
    case_rows,
    set_state,
)
from reconcile.db import session_scope
from reconcile.exports.runs import latest_completed_run
from reconcile.exports.table import NotReconciled
from reconcile.formats import br_date
from reconcile.masking import mask_text
from reconcile.models import CaseState, ExceptionCase
from reconcile.settings import get_settings
from reconcile.timeutil import as_utc, business_today

exceptions_app = typer.Typer(
    help=(
        "Open exceptions: list them, show one in full, acknowledge, resolve (with a note) "
        "or reopen them."
    ),
    invoke_without_command=True,
)


@exceptions_app.callback()
def exceptions(
    ctx: typer.Context,
    day: Annotated[str | None, typer.Option("--date", help="only this business day")] = None,
    everything: Annotated[bool, typer.Option("--all", help="include resolved and cleared")] = False,
    wide: Annotated[
        bool, typer.Option("--wide", help="every field in its own column (wider than 80)")
    ] = False,
    output: FormatOption = OutputFormat.table,
) -> None:
    """List open (and acknowledged) exceptions, the most urgent first (priority 1: money
    near or past its last day to be refunded, or an open MED case near or past its
    deadline, as of today): how much, why, what to do, the
    references a person knows them by (txid, endToEndId, the payer masked) and how long
    they have been seen (age in days, to today)."""
    if ctx.invoked_subcommand is not None:
        return
    business_day = day_option(day) if day is not None else None
    engine = database_or_exit(get_settings(), auto_upgrade=False)
    states = tuple(CaseState) if everything else CaseState.remaining()
    with session_scope(engine) as session:
        # The most urgent first, as the dashboard's list and the day's report give them.
        rows = case_rows(
            session, day=business_day, states=states, as_of=business_today(), by_priority=True
        )
    if not rows and business_day is not None:
        _judged_or_exit(engine, business_day)
    for notice in _unjudged_days(engine, rows):
        # Said before the list, on stderr, as `pixrecon export` says it: a person acting on
        # these cases must know that their day's latest run claims nothing.
        say(escape(notice), "warning")
    if output is OutputFormat.json:
        # ``id`` as well as ``case_id``: scripts written against the first listing read it.
        listed = [{"id": row["case_id"], **row} for row in rows]
        sys.stdout.write(json.dumps(listed, indent=2) + "\n")
        return
    if not rows:
        console.print("No exceptions" + (f" on {br_date(business_day)}." if business_day else "."))
        return
    if wide:
        # As wide as the fields need: for a wide terminal, or a pager with -S.
        Console(width=max(console.width, 5000)).print(exceptions_table(rows, wide=True))
        return
    console.print(exceptions_table(rows, today=business_today()))


def _unjudged_days(engine: Engine, rows: list[dict[str, Any]]) -> list[str]:
    """For each day of the listed cases whose latest completed run could not read every
    source (``incomplete``), the line that says so."""
    notices = []
    for day in sorted({str(row["date"]) for row in rows}):
        try:
            notice = latest_completed_run(engine, date.fromisoformat(day)).notice()
        except NotReconciled:
            continue
        if notice is not None:
            notices.append(notice)
    return notices


def _judged_or_exit(engine: Engine, day: date) -> None:
    """A day nothing judged listed as "no exceptions" would read as a clean day."""
    if day > business_today():
        raise fail(f"{day.isoformat()} has not begun yet: it has no exceptions to list")
    try:
        latest_completed_run(engine, day)
    except NotReconciled as exc:
        raise fail(str(exc)) from None


def _refusal(case_id: int, state: CaseState, was: str) -> str:
    """Why an action does not apply to a case as it stands, and what would."""
    if state is CaseState.OPEN:
        return f"case {case_id} is {was}, not resolved or cleared: nothing to reopen"
    verb = "acknowledged" if state is CaseState.ACKNOWLEDGED else "resolved"
    if was == CaseState.RESOLVED.value and state is CaseState.RESOLVED:
        # A second resolve would silently replace how the case was resolved.
        return (
            f"case {case_id} is already resolved: nothing changed (its note stays); "
            f"`pixrecon exceptions history {case_id}` shows how"
        )
    return (
        f"case {case_id} is {was}: it cannot be {verb}, nothing changed; "
        f"`pixrecon exceptions reopen {case_id}` puts it back among the remaining ones"
    )


def _set(case_id: int, state: CaseState, note: str | None) -> None:
    engine = database_or_exit(get_settings(), auto_upgrade=False)
    with session_scope(engine) as session:
        before = session.get(ExceptionCase, case_id)
        was = before.state if before is not None else None
        try:
            # The dashboard's rule: acknowledge and resolve apply to a remaining case,
            # reopen to a closed one; anything else changes nothing and says so.
            case = set_state(session, case_id, state, note, expect=APPLIES_TO[state])
        except CaseNotFound:
            raise fail(f"no exception case {case_id}") from None
        except NoteRequired:
            raise fail("resolving a case needs --note: say how it was resolved") from None
        except CaseChanged as changed:
            raise fail(_refusal(case_id, state, changed.state)) from None
        # A person must see what their command changed: a second acknowledgement
        # replaces the note.
        if was == case.state:
            replaced = "; its note is the one given now" if note else ""
            said = f"case {case.id} was already {case.state}{replaced}"
        elif was in (CaseState.RESOLVED.value, CaseState.CLEARED.value):
            said = f"case {case.id} was {was}; it is {case.state} now, remaining again"
        else:
            said = f"case {case.id} is now {case.state} (was {was})"
    # Only once committed: a commit the database refuses must not follow a line saying
    # the case changed.
    console.print(said)


@exceptions_app.command("ack")
def acknowledge(
    case_id: Annotated[
        int, typer.Argument(metavar="ID", help="case id", callback=known_id("exception case"))
    ],
    note: Annotated[str | None, typer.Option(help="what is being done")] = None,
) -> None:
    """Acknowledge an open or acknowledged case: someone is on it (it still counts as
    remaining). A resolved or cleared case is refused (exit 2): reopen it first."""
    _set(case_id, CaseState.ACKNOWLEDGED, note)


@exceptions_app.command("resolve")
def resolve(
    case_id: Annotated[
        int, typer.Argument(metavar="ID", help="case id", callback=known_id("exception case"))
    ],
    note: Annotated[str, typer.Option(help="how it was resolved")],
) -> None:
    """Resolve an open or acknowledged case with a note; re-running the day keeps it
    resolved. A case already resolved (or cleared) is refused (exit 2), its note kept."""
    _set(case_id, CaseState.RESOLVED, note)


@exceptions_app.command("reopen")
def reopen(
    case_id: Annotated[
        int, typer.Argument(metavar="ID", help="case id", callback=known_id("exception case"))
    ],
    note: Annotated[str | None, typer.Option(help="why it is not done")] = None,
) -> None:
    """Reopen a resolved or cleared case: it is among the remaining ones again (recorded
    as ``reopen``). A case still open or acknowledged is refused (exit 2)."""
    _set(case_id, CaseState.OPEN, note)


def _events(session: Session, case_id: int) -> list[dict[str, Any]]:
    return [
        {
            "at": as_utc(event.at).isoformat(),
            "actor": event.actor,
            "action": event.action,
            "previous_state": event.previous_state,
            # Stored masked already; masked again in case an older row was not.
            "note": mask_text(event.note) if event.note is not None else None,
        }
        for event in case_events(session, case_id)
    ]


@exceptions_app.command("history")
def history(
    case_id: Annotated[
        int, typer.Argument(metavar="ID", help="case id", callback=known_id("exception case"))
    ],
    output: FormatOption = OutputFormat.table,
) -> None:
    """Who did what to a case, and when (São Paulo time): every acknowledgement,
    resolution and reopening, with its note, oldest first."""
    engine = database_or_exit(get_settings(), auto_upgrade=False)
    with session_scope(engine) as session:
        if session.get(ExceptionCase, case_id) is None:
            raise fail(f"no exception case {case_id}")
        events = _events(session, case_id)
    if output is OutputFormat.json:
        sys.stdout.write(json.dumps(events, indent=2) + "\n")
        return
    if not events:
        console.print(f"Nobody has acted on case {case_id} yet.")
        return
    console.print(history_table(events, f"Case {case_id}"))


@exceptions_app.command("show")
def show(
    case_id: Annotated[
        int, typer.Argument(metavar="ID", help="case id", callback=known_id("exception case"))
    ],
    output: FormatOption = OutputFormat.table,
) -> None:
    """One case in full, as the dashboard's case page shows it: its day, subject,
    reference and the references a person knows it by (txid, endToEndId, the payer
    masked), status and state, the amounts, why, what to do (as of today), its last day
    to refund or MED analysis deadline, the statement line and notifications that
    decided it, and its history (São Paulo time)."""
    engine = database_or_exit(get_settings(), auto_upgrade=False)
    with session_scope(engine) as session:
        found = case_detail(session, case_id)
        if found is None:
            raise fail(f"no exception case {case_id}")
        shown = shown_case(found, _events(session, case_id))
    for notice in _unjudged_days(engine, [shown]):
        say(escape(notice), "warning")
    if output is OutputFormat.json:
        sys.stdout.write(json.dumps(shown, indent=2) + "\n")
        return
    print_case(console, shown, today=business_today())
