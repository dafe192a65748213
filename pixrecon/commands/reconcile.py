"""``pixrecon reconcile --date D``: fetch the business day from the provider, reconcile it
and answer with a report and an exit code."""

from __future__ import annotations

import sys
from datetime import date
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import Progress, TaskID
from sqlalchemy import Engine

from pixrecon.bootstrap import StartupError, open_database, setup_logging, why_unavailable
from pixrecon.commands.common import (
    FormatOption,
    Interrupted,
    OutputFormat,
    cannot_write,
    console,
    day_option,
    fail,
    one_line,
    progress,
    provider_advice,
    writable_or_exit,
)
from pixrecon.commands.export import to_file
from pixrecon.report import print_report, write_json_report
from reconcile.db import UNAVAILABLE_ERRORS
from reconcile.exports.files import Format, Kind, open_export
from reconcile.exports.table import ExportError
from reconcile.formats import br_date
from reconcile.logs import get_logger
from reconcile.matching.context import Judging
from reconcile.nightly import STEPS, reconcile_day
from reconcile.polling.day import Fetched, fetch_day, sources_of
from reconcile.processing import process_items
from reconcile.provider.errors import ProviderError
from reconcile.provider.factory import provider_clients
from reconcile.settings import get_settings
from reconcile.timeutil import business_today

log = get_logger(__name__)


class ExportFormat(StrEnum):
    """``--export``'s formats: ``json`` is JSON lines, one exception a line."""

    csv = "csv"
    json = "json"
    jsonl = "jsonl"


# What stops a run from giving an answer: exit code 2, never a half-true report.
RUN_ERRORS: tuple[type[Exception], ...] = (StartupError, ProviderError, *UNAVAILABLE_ERRORS)


def _export_exceptions(engine: Engine, day: date, kind: ExportFormat, path: Path) -> None:
    """The day's exceptions as ``pixrecon export --kind exceptions`` writes them."""
    fmt = Format.csv if kind is ExportFormat.csv else Format.jsonl
    try:
        made = open_export(engine, day, Kind.exceptions, fmt)
        to_file(made.chunks, path)
    except ExportError as exc:
        raise fail(f"the day was reconciled, but not exported: {escape(str(exc))}") from None
    except OSError as exc:
        again = f"pixrecon export --date {day.isoformat()} --kind exceptions"
        raise fail(
            f"{cannot_write(path, exc)} (the day was reconciled: `{again}` writes its exceptions)"
        ) from None


def _again(day: date) -> str:
    return f"run `pixrecon reconcile --date {day.isoformat()}` again"


def _stopped_fetching(day: date, fetching: list[str]) -> str:
    during = f" while fetching {fetching[-1]}" if fetching else ""
    return (
        f"the reconciliation of {br_date(day)} stopped{escape(during)}, before matching: "
        f"nothing was concluded (what was fetched is kept; fetching it again is safe); "
        f"{_again(day)}"
    )


def _stopped_matching(day: date) -> str:
    # reconcile_day marks its run failed and deletes its verdicts on any interruption.
    return (
        f"the reconciliation of {br_date(day)} stopped while matching: its run is marked "
        f"failed and keeps no verdict, nothing was concluded; {_again(day)}"
    )


def _tries(exc: ProviderError, budget: float) -> str:
    """How long the call that failed kept trying, as measured; nothing for an error it
    did not retry (a refusal, a bad request), which more time would not have changed."""
    if exc.attempts is None or exc.elapsed is None:
        return ""
    attempts = "1 attempt" if exc.attempts == 1 else f"{exc.attempts} attempts"
    return (
        f", after {attempts} over {exc.elapsed:.0f} s (PIXRECON_PROVIDER_RETRY_SECONDS={budget:g}: "
        "no retry begins after that long from the first attempt)"
    )


def _fetching(name: str, steps: list[str], bar: Progress, task: TaskID) -> None:
    steps.append(name)
    bar.update(task, description=f"fetching {name}")


def reconcile_command(
    day: Annotated[
        str,
        typer.Option(
            "--date", help="business day YYYY-MM-DD (America/Sao_Paulo), today at the latest"
        ),
    ],
    output: FormatOption = OutputFormat.table,
    export: Annotated[
        tuple[ExportFormat, Path] | None,
        typer.Option(
            "--export",
            metavar="FORMAT PATH",
            help="write the day's exceptions as `pixrecon export --kind exceptions` does: "
            "--export csv|jsonl PATH (json is accepted for jsonl)",
        ),
    ] = None,
    poll: Annotated[bool, typer.Option(help="fetch the day from the provider first")] = True,
) -> None:
    """Reconcile a whole business day and give its verdict.

    Fetches the day from the provider first (unless --no-poll). A day still going is
    judged as of now; one that has not begun is refused. Exit code 0 reconciled;
    1 breaks (exceptions remain) or reconciled with pending items; 2 incomplete (a source
    could not be read) or the reconciliation could not run."""
    settings = get_settings()
    setup_logging(settings)
    business_day = day_option(day)
    if export is not None:
        writable_or_exit(export[1])
    today = business_today()
    if business_day > today:
        # Nothing of it can have happened: a verdict would claim a day nobody lived, and
        # its carried cases would open in the future.
        raise fail(
            f"--date {business_day.isoformat()} has not begun yet (today is {br_date(today)} "
            "in São Paulo): a day can be reconciled once it has begun, and for good once "
            "it is over"
        )
    providers = provider_clients(settings)
    # What was being fetched, to name the source when the provider gives out.
    fetching: list[str] = []
    matching = False
    try:
        engine = open_database(settings, auto_upgrade=False)
        with progress(transient=output is OutputFormat.json) as bar:
            fetched: Fetched | None = None
            if poll:
                task = bar.add_task("fetching the day", total=None)
                # Processed right here, page by page: idempotent with workers doing the same.
                fetched = fetch_day(
                    engine,
                    providers,
                    business_day,
                    settings,
                    on_new=lambda ids: process_items(engine, ids),
                    on_step=lambda name: _fetching(name, fetching, bar, task),
                )
                fetching.clear()
                bar.update(task, description="fetched the day", total=1, completed=1)
            task = bar.add_task("matching", total=len(STEPS))
            matching = True
            result = reconcile_day(
                engine,
                business_day,
                on_step=lambda name: bar.update(task, description=f"matching {name}", advance=1),
                judging=Judging.from_settings(settings),
                sources=sources_of(providers, settings, fetched),
            )
    except KeyboardInterrupt:
        if not matching:
            raise Interrupted(_stopped_fetching(business_day, fetching)) from None
        raise Interrupted(_stopped_matching(business_day)) from None
    except StartupError as exc:
        raise fail(f"the reconciliation could not run: {escape(str(exc))}") from None
    except ProviderError as exc:
        during = f" while fetching {fetching[-1]}" if fetching else ""
        raise fail(
            f"the reconciliation could not run: the provider's API failed{escape(during)} "
            f"({one_line(exc)}){_tries(exc, settings.provider_retry_seconds)}; "
            f"nothing was concluded — {provider_advice(exc, settings)}"
        ) from None
    except UNAVAILABLE_ERRORS as exc:
        said = why_unavailable(settings.database_url, exc)
        raise fail(f"the reconciliation could not run: {escape(said)}") from None
    except RUN_ERRORS as exc:
        raise fail(f"the reconciliation could not run: {one_line(exc)}") from None
    except Exception as exc:
        # Never a traceback, and never exit 1 (which means "exceptions remain"): say what
        # broke, in one line, and where the details went.
        log.debug("reconcile_crashed", exc_info=True)
        raise fail(
            f"the reconciliation stopped on an unexpected error ({one_line(exc)}); nothing "
            "was concluded — PIXRECON_LOG_LEVEL=DEBUG shows where it happened"
        ) from None
    finally:
        providers.close()
    try:
        if export is not None:
            _export_exceptions(engine, business_day, *export)
        if output is OutputFormat.json:
            write_json_report(result, sys.stdout)
        else:
            print_report(result, console)
    except KeyboardInterrupt:
        # The verdict is stored by now: say so, rather than that nothing was concluded.
        day = business_day.isoformat()
        raise Interrupted(
            f"the day was reconciled (run {result.run_id}, {result.verdict.value}), but its "
            f"report was cut short: `pixrecon exceptions --date {day}` lists its exceptions"
        ) from None
    raise typer.Exit(result.exit_code)
