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

from pixrecon.bootstrap import StartupError, open_database, setup_logging
from pixrecon.commands.common import FormatOption, OutputFormat, console, fail, one_line, progress
from pixrecon.report import print_report, write_json_report
from reconcile.db import UNAVAILABLE_ERRORS
from reconcile.exports.files import Format, Kind, encoded, open_export
from reconcile.exports.table import ExportError
from reconcile.logs import get_logger
from reconcile.matching.context import Judging
from reconcile.nightly import STEPS, reconcile_day
from reconcile.polling.day import Fetched, fetch_day, sources_of
from reconcile.processing import process_items
from reconcile.provider.errors import ProviderError
from reconcile.provider.factory import provider_clients
from reconcile.settings import get_settings

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
        with path.open("wb") as handle:
            for chunk in encoded(made.chunks):
                handle.write(chunk)
    except ExportError as exc:
        raise fail(f"the day was reconciled, but not exported: {escape(str(exc))}") from None
    except OSError as exc:
        raise fail(
            f"the day was reconciled, but {escape(str(path))} cannot be written: {one_line(exc)}"
        ) from None


def _fetching(name: str, steps: list[str], bar: Progress, task: TaskID) -> None:
    steps.append(name)
    bar.update(task, description=f"fetching {name}")


def reconcile_command(
    day: Annotated[str, typer.Option("--date", help="business day YYYY-MM-DD (America/Sao_Paulo)")],
    output: FormatOption = OutputFormat.table,
    export: Annotated[
        tuple[ExportFormat, Path] | None,
        typer.Option(
            "--export",
            help="write the day's exceptions as `pixrecon export --kind exceptions` does: "
            "--export csv|json PATH (json: JSON lines)",
        ),
    ] = None,
    poll: Annotated[bool, typer.Option(help="fetch the day from the provider first")] = True,
) -> None:
    """Reconcile a whole business day and give its verdict.

    Fetches the day from the provider first (unless --no-poll). Exit code 0 reconciled;
    1 breaks (exceptions remain) or reconciled with pending items; 2 incomplete (a source
    could not be read) or the reconciliation could not run."""
    settings = get_settings()
    setup_logging(settings)
    try:
        business_day = date.fromisoformat(day)
    except ValueError:
        raise fail(f"--date must be YYYY-MM-DD, got {escape(day)!r}") from None
    providers = provider_clients(settings)
    # What was being fetched, to name the source when the provider gives out.
    fetching: list[str] = []
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
            result = reconcile_day(
                engine,
                business_day,
                on_step=lambda name: bar.update(task, description=f"matching {name}", advance=1),
                judging=Judging.from_settings(settings),
                sources=sources_of(providers, settings, fetched),
            )
    except StartupError as exc:
        raise fail(f"the reconciliation could not run: {escape(str(exc))}") from None
    except ProviderError as exc:
        during = f" while fetching {fetching[-1]}" if fetching else ""
        raise fail(
            f"the reconciliation could not run: the provider's API failed{escape(during)} "
            f"({one_line(exc)}), after retrying for up to "
            f"{settings.provider_retry_seconds:g} s (PIXRECON_PROVIDER_RETRY_SECONDS); "
            "nothing was concluded — run it again once the provider answers"
        ) from None
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
    if export is not None:
        _export_exceptions(engine, business_day, *export)
    if output is OutputFormat.json:
        write_json_report(result, sys.stdout)
    else:
        print_report(result, console)
    raise typer.Exit(result.exit_code)
