"""``pixrecon reconcile`` and ``pixrecon exceptions``: the nightly run and its follow-up."""

from __future__ import annotations

import csv
import json
import sys
from datetime import date, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from pixrecon.bootstrap import StartupError, open_database, setup_logging
from reconcile.confirmation import confirm_pending_movements, confirm_pending_pix
from reconcile.db import UNAVAILABLE_ERRORS, session_scope
from reconcile.exceptions import CaseNotFound, list_cases, set_state
from reconcile.money import from_cents
from reconcile.nightly import NightlyResult, reconcile_day
from reconcile.polling import poll_received_pix
from reconcile.polling_accounts import (
    poll_infractions,
    poll_invoices,
    poll_pending_payouts,
    poll_statement,
)
from reconcile.polling_charges import poll_charges
from reconcile.processing import process_items
from reconcile.provider import factory
from reconcile.provider.errors import ProviderError
from reconcile.settings import Settings, get_settings
from reconcile.timeutil import business_day_bounds

# What stops a run from giving an answer: exit code 2, never a half-true report.
RUN_ERRORS: tuple[type[Exception], ...] = (StartupError, ProviderError, *UNAVAILABLE_ERRORS)
console = Console()
err = Console(stderr=True)
exceptions_app = typer.Typer(
    help="Open exceptions: list them, acknowledge or resolve them with a note.",
    invoke_without_command=True,
)


class ExportFormat(StrEnum):
    csv = "csv"
    json = "json"


def _poll_day(settings: Settings, engine: Any, day: date, progress: Progress) -> None:
    """Fetch what the day needs from the provider, then process it right here (idempotent
    with the workers doing the same)."""
    start, end = business_day_bounds(day)
    # A little before and after: Pix booked near midnight, statement lines that lag.
    wide_start, wide_end = start - timedelta(hours=1), end + timedelta(hours=1)
    new: list[int] = []
    pix, accounts = factory.pix_api(settings), factory.accounts_api(settings)
    if pix is not None:
        task = progress.add_task("polling Pix received", total=None)
        new += poll_received_pix(pix, engine, wide_start, wide_end).new_ids
        progress.update(task, description="polling charges")
        for polled in poll_charges(
            pix, engine, wide_start - timedelta(days=1), wide_end
        ).by_kind.values():
            new += polled.new_ids
        progress.update(task, description="polled the Pix API", total=1, completed=1)
    if accounts is not None:
        task = progress.add_task("polling the statement", total=None)
        new += poll_statement(accounts, engine, wide_start, wide_end).new_ids
        new += poll_infractions(accounts, engine, wide_start, wide_end).new_ids
        progress.update(task, description="polling payouts in flight")
        new += poll_pending_payouts(accounts, engine).new_ids
        new += poll_invoices(accounts, engine).new_ids
        progress.update(task, description="polled the accounts API", total=1, completed=1)
    task = progress.add_task(f"processing {len(new)} new items", total=len(new))
    for start_at in range(0, len(new), 500):
        process_items(engine, new[start_at : start_at + 500])
        progress.advance(task, min(500, len(new) - start_at))
    if settings.confirm_policy == "api":
        grace = timedelta(seconds=settings.confirm_grace_seconds)
        task = progress.add_task("confirming by API", total=None)
        if pix is not None:
            while confirm_pending_pix(engine, pix, grace=grace).handled:
                pass
        if accounts is not None:
            while confirm_pending_movements(engine, accounts, pix, grace=grace).handled:
                pass
        progress.update(task, total=1, completed=1)


def _money(cents: object) -> str:
    return f"R$ {from_cents(int(cents))}" if isinstance(cents, int) else "—"


def print_report(result: NightlyResult, console: Console = console) -> None:
    report = result.report
    console.print(f"[bold]Reconciliation of {report['date']}[/] (run {result.run_id})")
    tables = []
    for title, key in (
        ("movements", "counts"),
        ("charges", "charges"),
        ("payouts", "payouts"),
        ("infractions", "infractions"),
    ):
        if report[key]:
            table = Table(title, "n")
            for name, n in sorted(report[key].items()):
                table.add_row(name, str(n))
            tables.append(table)
    console.print(*tables)
    money = Table("money", "webhook", "poll / API", "statement")
    totals = report["totals"]
    money.add_row(
        "credits",
        _money(totals["credits"]["webhook"]),
        _money(totals["credits"]["poll"]),
        _money(totals["credits"]["statement"]),
    )
    money.add_row(
        "debits", "—", _money(totals["debits"]["api"]), _money(totals["debits"]["statement"])
    )
    money.add_row(
        "refunds", "—", _money(totals["refunds"]["api"]), _money(totals["refunds"]["statement"])
    )
    balance = report["balance"]
    money.add_row("opening balance", "", "", _money(balance["opening_cents"]))
    money.add_row("closing balance", "", "", _money(balance["closing_cents"]))
    money.add_row("balance drift", "", "", _money(report["balance_drift_cents"]))
    console.print(money)
    if report["exceptions"]:
        table = Table("case", "subject", "ref", "status", "state", "reason", title="Exceptions")
        for case in report["exceptions"]:
            table.add_row(
                str(case["case_id"]),
                case["subject"],
                case["ref"],
                case["status"],
                case["state"],
                case["reason"],
            )
        console.print(table)
    verdict = "all reconciled" if result.exit_code == 0 else "exceptions remain"
    console.print(f"[bold]{verdict}[/] (exit code {result.exit_code})")


def _export(result: NightlyResult, kind: ExportFormat, path: Path) -> None:
    cases = result.report["exceptions"]
    if kind is ExportFormat.json:
        path.write_text(json.dumps(cases, indent=2) + "\n", encoding="utf-8")
        return
    columns = [
        "case_id",
        "subject",
        "ref",
        "status",
        "state",
        "reason",
        "expected_cents",
        "actual_cents",
    ]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(cases)


def reconcile_command(
    day: Annotated[str, typer.Option("--date", help="business day YYYY-MM-DD (America/Sao_Paulo)")],
    output: Annotated[str, typer.Option("--format", "-f", help="table or json")] = "table",
    export: Annotated[
        tuple[ExportFormat, Path] | None,
        typer.Option("--export", help="write the exceptions: --export csv|json PATH"),
    ] = None,
    poll: Annotated[bool, typer.Option(help="fetch the day from the provider first")] = True,
) -> None:
    """Reconcile a whole business day. Exit code: 0 all reconciled, 1 exceptions remain,
    2 could not run."""
    settings = get_settings()
    setup_logging(settings)
    try:
        business_day = date.fromisoformat(day)
    except ValueError:
        err.print(f"[red]error:[/] --date must be YYYY-MM-DD, got {day!r}")
        raise typer.Exit(2) from None
    try:
        engine = open_database(settings, auto_upgrade=True)
        columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
        with Progress(*columns, console=err, transient=output == "json") as progress:
            if poll:
                _poll_day(settings, engine, business_day, progress)
            task = progress.add_task("matching", total=5)
            result = reconcile_day(
                engine,
                business_day,
                on_step=lambda name: progress.update(
                    task, description=f"matching {name}", advance=1
                ),
            )
    except RUN_ERRORS as exc:
        err.print(f"[red]error:[/] the reconciliation could not run: {type(exc).__name__}: {exc}")
        raise typer.Exit(2) from None
    if export is not None:
        _export(result, export[0], export[1])
    if output == "json":
        sys.stdout.write(json.dumps(result.report) + "\n")
    else:
        print_report(result)
    raise typer.Exit(result.exit_code)


@exceptions_app.callback()
def exceptions(
    ctx: typer.Context,
    day: Annotated[str | None, typer.Option("--date", help="only this business day")] = None,
    everything: Annotated[bool, typer.Option("--all", help="include resolved and cleared")] = False,
    output: Annotated[str, typer.Option("--format", "-f", help="table or json")] = "table",
) -> None:
    """List open (and acknowledged) exceptions."""
    if ctx.invoked_subcommand is not None:
        return
    engine = _engine()
    states = (
        ("open", "acknowledged", "resolved", "cleared") if everything else ("open", "acknowledged")
    )
    with session_scope(engine) as session:
        rows = list_cases(session, day=date.fromisoformat(day) if day else None, states=states)
    if output == "json":
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    table = Table("id", "date", "subject", "ref", "status", "state", "note")
    for row in rows:
        table.add_row(
            str(row["id"]),
            row["date"],
            row["subject"],
            row["ref"],
            row["status"],
            row["state"],
            row["note"] or "",
        )
    console.print(table)


def _engine() -> Any:
    try:
        return open_database(get_settings(), auto_upgrade=True)
    except StartupError as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None


def _set(case_id: int, state: str, note: str | None) -> None:
    with session_scope(_engine()) as session:
        try:
            case = set_state(session, case_id, state, note)
        except CaseNotFound:
            err.print(f"[red]error:[/] no exception case {case_id}")
            raise typer.Exit(1) from None
        console.print(f"case {case.id} is now {case.state}")


@exceptions_app.command("ack")
def acknowledge(
    case_id: Annotated[int, typer.Argument(help="case id")],
    note: Annotated[str | None, typer.Option(help="what is being done")] = None,
) -> None:
    """Acknowledge a case: someone is on it (it still counts as remaining)."""
    _set(case_id, "acknowledged", note)


@exceptions_app.command("resolve")
def resolve(
    case_id: Annotated[int, typer.Argument(help="case id")],
    note: Annotated[str, typer.Option(help="how it was resolved")],
) -> None:
    """Resolve a case with a note; re-running the day keeps it resolved."""
    _set(case_id, "resolved", note)
