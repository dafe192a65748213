"""The demo from start to end: which day, the progress while it plays, then the nightly
report, the self-check and, with ``--serve``, the dashboard until Ctrl-C."""

from __future__ import annotations

import errno
import time
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from sqlalchemy.engine import make_url

from pixrecon.bootstrap import StartupError
from pixrecon.demo.checks import checks_table, self_checks
from pixrecon.demo.day import (
    DEMO_LOG_LEVEL,
    DemoError,
    PlayedDay,
    open_demo_database,
    played_day,
)
from pixrecon.demo.serve import make_login, print_invitation, wait_for_interrupt
from pixrecon.report import print_report
from reconcile.formats import br_date, count
from reconcile.logs import configure_logging
from reconcile.provider.errors import ProviderError
from reconcile.timeutil import BUSINESS_TZ, business_today
from sandbox.scenario import Scenario, ScenarioError, ScenarioOutcome, load_scenario

DEFAULT_SCENARIO = Path(__file__).with_name("business-day.json")
DEFAULT_DATABASE_URL = "sqlite:///pixrecon-demo.db"

# What a port of the user's choosing can fail with: taken, not this machine's, privileged.
_CANNOT_LISTEN = frozenset((errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES))


@dataclass(frozen=True)
class DemoOptions:
    scenario: Path | None = None  # None: the shipped business day
    day: date | None = None  # None: the scenario's own date, else yesterday
    seed: int | None = None  # None: the scenario's own seed
    database_url: str = DEFAULT_DATABASE_URL
    serve: bool = False
    host: str = "127.0.0.1"
    port: int = 8000


def prepare(options: DemoOptions, today: date | None = None) -> tuple[Scenario, date]:
    """The scenario to play and its day; ``DemoError`` when either cannot be."""
    try:
        scenario = load_scenario(options.scenario or DEFAULT_SCENARIO)
    except ScenarioError as exc:
        raise DemoError(str(exc)) from None
    if options.seed is not None:
        scenario = scenario.model_copy(update={"seed": options.seed})
    today = today or business_today()
    day = options.day or scenario.date or today - timedelta(days=1)
    if day >= today:
        # The nightly run judges a day as of its end; a day still going has no verdict.
        raise DemoError(
            f"the demo plays a business day that is over, and {br_date(day)} is not "
            f"(today is {br_date(today)} in São Paulo): choose an earlier --date"
        )
    return scenario, day


def database_shown(options: DemoOptions) -> str:
    return make_url(options.database_url).render_as_string(hide_password=True)


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description:<34}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )


_APIS = {"qrcode": "the QR code API", "accounts": "the accounts API", "both": "both APIs"}


def _faults_thrown(outcome: ScenarioOutcome) -> list[str]:
    """What the day threw at pixrecon, as the sandbox tells it (no check: the context of
    the checks above)."""
    real = [n for n in outcome.notifications if not n.forged]
    lines = [
        f"{count(outcome.posts_sent)} webhook requests for {count(len(real))} notifications: "
        f"{count(len(outcome.dropped))} dropped, {count(len(outcome.duplicated))} repeated, "
        f"{count(len(outcome.delayed))} delayed past the others, "
        f"{count(len(outcome.forged))} forged"
    ]
    for fault in outcome.api_faults:
        at = fault.at.astimezone(BUSINESS_TZ).strftime("%H:%M")
        lines.append(f"{at} {_APIS.get(fault.api, fault.api)}: {fault.description}")
    return lines


def _report(played: PlayedDay, console: Console, started: float, options: DemoOptions) -> bool:
    result, outcome, day = played.result, played.outcome, played.result.day
    console.rule(f"the nightly reconciliation of {br_date(day)}")
    print_report(result, console)
    if result.exit_code:
        console.print(
            f"In production `pixrecon reconcile --date {day.isoformat()}` exits "
            f"{result.exit_code} on this day: a person has the exceptions above to act on, "
            "as the scenario planted them. The check below compares every figure with "
            "what really happened."
        )
    console.rule("the demo's own check")
    checks = self_checks(played.engine, result, outcome)
    for section in checks.sections:
        console.print(checks_table(section))
    console.print("[bold]What the day threw at pixrecon[/] (the sandbox's own account)")
    for line in _faults_thrown(outcome):
        console.print(f"  {escape(line)}")
    database = database_shown(options)
    console.print(
        f"{escape(played.scenario.name)}, {br_date(day)}: played, fetched, reconciled and "
        f"checked in {time.monotonic() - started:.1f} s. Database: {escape(database)} — "
        f"try `pixrecon exceptions --date {day.isoformat()}` with PIXRECON_DATABASE_URL set "
        "to it."
    )
    if checks.ok:
        console.print("[bold green]every figure agrees with the sandbox (✓ above)[/]")
    else:
        console.print("[bold red]the demo found a discrepancy (✗ above)[/]")
    return checks.ok


def _could_not_run(exc: OSError) -> DemoError:
    """A failure of the system (a read-only or full disk, a file it may not write) said
    as it is."""
    where = f": {exc.filename}" if exc.filename else ""
    return DemoError(f"the demo could not run: {exc.strerror or exc}{where}")


def _unusable_database(exc: StartupError, options: DemoOptions) -> DemoError:
    # The demo's database is its --database-url, whatever the environment holds.
    said = str(exc).replace("PIXRECON_DATABASE_URL", "--database-url")
    if "`pixrecon db upgrade`" in said:
        # That command migrates PIXRECON_DATABASE_URL, not the demo's --database-url.
        said = said.replace(
            "`pixrecon db upgrade`",
            f"`PIXRECON_DATABASE_URL={database_shown(options)} pixrecon db upgrade`",
        )
    return DemoError(said)


def run_demo(options: DemoOptions, console: Console) -> int:
    """0 when every self-check agrees, 1 when one does not; ``DemoError`` when the demo
    cannot run as asked."""
    started = time.monotonic()
    scenario, day = prepare(options)
    configure_logging(DEMO_LOG_LEVEL)
    # The database is opened before the day is introduced: one that cannot be used is
    # then the demo's one line, not a story cut short.
    try:
        engine = open_demo_database(options.database_url)
    except OSError as exc:
        raise _could_not_run(exc) from None
    except StartupError as exc:
        raise _unusable_database(exc, options) from None
    login = make_login() if options.serve else None
    console.print(
        f"[bold]pixrecon demo[/]: {escape(scenario.name)} on {br_date(day)}"
        + (f" — {escape(scenario.description)}" if scenario.description else "")
    )
    listen = (options.host, options.port if options.serve else 0)
    with ExitStack() as running:
        running.callback(engine.dispose)
        try:
            with _progress(console) as progress:
                played = running.enter_context(
                    played_day(
                        scenario,
                        day,
                        database_url=options.database_url,
                        progress=progress,
                        listen=listen,
                        login=login,
                        engine=engine,
                    )
                )
        except OSError as exc:
            if options.serve and exc.errno in _CANNOT_LISTEN:
                # The address, not the port, is what is wrong when it is none of this
                # machine's: naming --port then sends the user after the wrong option.
                other = (
                    "--host: 127.0.0.1, or 0.0.0.0 for every interface"
                    if exc.errno == errno.EADDRNOTAVAIL
                    else "--port"
                )
                raise DemoError(
                    f"the receiver cannot listen on {options.host}:{options.port} "
                    f"({exc.strerror or exc}): choose another with {other}"
                ) from None
            # Without --serve nothing listens on a port of the user's.
            raise _could_not_run(exc) from None
        except StartupError as exc:
            raise _unusable_database(exc, options) from None
        except ProviderError as exc:
            raise DemoError(f"the sandbox's API failed while the day was fetched: {exc}") from None
        ok = _report(played, console, started, options)
        if login is not None:
            print_invitation(console, played.receiver_url, login, day.isoformat())
            wait_for_interrupt()
            console.print("stopped: the receiver, its workers and the sandbox are down")
    return 0 if ok else 1
