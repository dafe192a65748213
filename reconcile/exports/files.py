"""What an export is asked as (a kind and a format) and what it gives: a file name, a
media type and the text, in chunks. Everything that can stop an export — a day never
reconciled, a balance nobody knows, a kind a format cannot carry — is found before the
first chunk, so a command fails cleanly and a download answers with an error page."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date, datetime
from enum import StrEnum

from sqlalchemy import Engine

from reconcile.exports.exceptions import exception_table
from reconcile.exports.movements import movement_table
from reconcile.exports.ofx import OfxAccount, ofx_chunks
from reconcile.exports.statement import (
    day_balance,
    statement_lines,
    statement_notice,
    statement_table,
)
from reconcile.exports.table import ExportError, Table
from reconcile.exports.tabular import csv_chunks, jsonl_chunks
from reconcile.formats import br_date
from reconcile.timeutil import BUSINESS_TZ, as_utc, utcnow


class Kind(StrEnum):
    exceptions = "exceptions"
    movements = "movements"
    statement = "statement"


class Format(StrEnum):
    csv = "csv"
    jsonl = "jsonl"
    ofx = "ofx"


MEDIA_TYPES = {
    Format.csv: "text/csv; charset=utf-8",
    Format.jsonl: "application/x-ndjson; charset=utf-8",
    Format.ofx: "application/x-ofx",
}


@dataclass(frozen=True)
class Export:
    filename: str
    media_type: str
    chunks: Iterator[str]
    notice: str | None = None


def choice_problem(kind: Kind, fmt: Format, *, excel: bool) -> str | None:
    """Why ``kind`` cannot be exported as ``fmt`` (with ``excel``), or ``None``."""
    if fmt is Format.ofx and kind is not Kind.statement:
        return (
            f"ofx is a bank statement: only the statement can be exported as ofx "
            f"({kind.value} as csv or jsonl)"
        )
    if excel and fmt is not Format.csv:
        return f"the Excel form is a CSV: it goes with csv, not {fmt.value}"
    return None


def open_export(
    engine: Engine,
    day: date,
    kind: Kind,
    fmt: Format,
    *,
    excel: bool = False,
    account: OfxAccount | None = None,
    now: datetime | None = None,
) -> Export:
    """The export of ``day``; ``ExportError`` (or a subclass: ``NotReconciled``,
    ``BalanceUnknown``) when it cannot be made. Reading continues while the chunks are
    consumed (``RunReplaced`` may still come then)."""
    problem = choice_problem(kind, fmt, excel=excel)
    if problem is not None:
        raise ExportError(problem)
    today = as_utc(now or utcnow()).astimezone(BUSINESS_TZ).date()
    if day > today:
        # A statement of a day to come would state today's balance as that day's.
        raise ExportError(
            f"{day.isoformat()} has not begun yet (today is {br_date(today)} in São Paulo): "
            "a day can be exported once it has begun"
        )
    if fmt is Format.ofx:
        balance = day_balance(engine, day, now)
        chunks = ofx_chunks(day, statement_lines(engine, day), balance, account, now)
        notice = statement_notice(engine, day)
        return Export(f"statement-{day.isoformat()}.ofx", MEDIA_TYPES[fmt], chunks, notice)
    table: Table
    if kind is Kind.exceptions:
        table = exception_table(engine, day)
    elif kind is Kind.movements:
        table = movement_table(engine, day)
    else:
        table = statement_table(engine, day)
    if fmt is Format.jsonl:
        return Export(f"{table.name}.jsonl", MEDIA_TYPES[fmt], jsonl_chunks(table), table.notice)
    name = f"{table.name}-excel.csv" if excel else f"{table.name}.csv"
    return Export(name, MEDIA_TYPES[fmt], csv_chunks(table, excel=excel), table.notice)


def encoded(chunks: Iterable[str]) -> Iterator[bytes]:
    """The chunks as UTF-8 bytes (the byte order mark of the Excel form included)."""
    for chunk in chunks:
        if chunk:
            yield chunk.encode("utf-8")
