"""``pixrecon export --date D --kind K --format F``: what is stored of a business day, as a
file for finance tools (docs/exports.md). It reads, never reconciles or polls: exceptions
and movements come from the day's latest completed run, the statement from the lines the
provider booked that day."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, BinaryIO

import typer
from rich.markup import escape

from pixrecon.commands.common import (
    cannot_write,
    console,
    database_or_exit,
    day_option,
    err,
    fail,
    say,
    writable_or_exit,
)
from reconcile.exports.files import Format, Kind, encoded, open_export
from reconcile.exports.ofx import OfxAccount
from reconcile.exports.table import ExportError
from reconcile.formats import br_date
from reconcile.logs import json_enabled
from reconcile.settings import get_settings

STDOUT = "-"


def _write(chunks: Iterable[str], handle: BinaryIO) -> None:
    for chunk in encoded(chunks):
        handle.write(chunk)
    handle.flush()


def to_file(chunks: Iterable[str], path: Path) -> bool:
    """Written beside the target and renamed into place once complete: an importer
    watching the folder never picks up half a day. A symbolic link is followed (the file
    it names is replaced, the link stays); what is no regular file — a named pipe, a
    device such as ``/dev/stdout`` — is written into, as it cannot be renamed onto.
    Whether it was such a stream, where a confirmation printed to standard output could
    land in the data. Raises ``OSError``, for the caller to word (``cannot_write``)."""
    if path.exists() and not path.is_file() and not path.is_dir():
        with path.open("wb") as handle:
            _write(chunks, handle)
        return True
    path = Path(os.path.realpath(path))
    partial = path.with_name(path.name + ".partial")
    try:
        with partial.open("wb") as handle:
            _write(chunks, handle)
        partial.replace(path)
    finally:
        with contextlib.suppress(FileNotFoundError, IsADirectoryError, PermissionError):
            partial.unlink()
    return False


def export_command(
    day: Annotated[str, typer.Option("--date", help="business day YYYY-MM-DD (America/Sao_Paulo)")],
    kind: Annotated[
        Kind, typer.Option("--kind", help="exceptions, movements (every verdict) or statement")
    ],
    fmt: Annotated[
        Format, typer.Option("--format", "-f", help="csv, jsonl, or ofx (statement only)")
    ],
    excel: Annotated[
        bool,
        typer.Option(
            "--excel", help="CSV for Excel in Brazil: ';', decimal comma, dd/mm/yyyy, BOM"
        ),
    ] = False,
    output: Annotated[
        str | None,
        typer.Option("--output", "-o", help="file to write (standard output without it, or -)"),
    ] = None,
) -> None:
    """Export a business day's exceptions, movements or statement for finance tools.

    Reads what is stored; it never reconciles: exceptions and movements need a completed
    run of the day (`pixrecon reconcile --date D`). Every row carries a `key` that stays
    the same across re-runs and re-exports (docs/exports.md)."""
    business_day = day_option(day)
    if fmt is Format.ofx and kind is not Kind.statement:
        raise fail(
            f"--format ofx is for --kind statement only (a bank statement); export "
            f"{kind.value} as csv or jsonl"
        )
    if excel and fmt is not Format.csv:
        raise fail(f"--excel goes with --format csv only, not {fmt.value}")
    path = Path(output) if output is not None and output != STDOUT else None
    if path is not None:
        writable_or_exit(path)
    settings = get_settings()
    engine = database_or_exit(settings, auto_upgrade=False)
    try:
        made = open_export(
            engine,
            business_day,
            kind,
            fmt,
            excel=excel,
            account=OfxAccount.from_settings(settings.accounts_account_id),
        )
        if made.notice is not None:
            # Said before the rows, on stderr: the file stays what finance tools read.
            say(escape(made.notice), "warning")
        if path is None:
            _write(made.chunks, sys.stdout.buffer)
            return
        try:
            streamed = to_file(made.chunks, path)
        except OSError as exc:
            raise fail(cannot_write(path, exc)) from None
    except ExportError as exc:
        raise fail(escape(str(exc))) from None
    finally:
        engine.dispose()
    where = escape(os.fspath(path))
    said = f"exported the {kind.value} of {br_date(business_day)} to {where}"
    if not streamed:
        console.print(said)
    elif not json_enabled():  # stderr of JSON logs takes log events only
        err.print(said)
