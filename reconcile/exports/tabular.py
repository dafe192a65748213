"""CSV and JSON lines, written as text chunks (a file, standard output or an HTTP download
takes them as they come).

- **CSV**: UTF-8, ``,``, amounts in reais with a dot (``229182.50``) in columns named
  without ``_cents``, ISO 8601 dates and São Paulo times with their offset.
- **CSV for Excel** (``excel=True``), as a spreadsheet in Brazil opens it directly: UTF-8
  with a byte order mark, ``;``, decimal comma (``229182,50``), ``dd/mm/yyyy`` dates and
  ``dd/mm/yyyy HH:MM:SS`` São Paulo times.
- **JSON lines**: one object per row, money in centavos (``*_cents`` integers), ISO 8601
  dates and times.

In both CSV forms a text cell that starts like a formula (``= + - @``, a tab or a carriage
return) gets a leading ``'``, so that no spreadsheet runs what a payer typed."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from datetime import date, datetime
from typing import Any

from reconcile.exports.cells import IDENTIFIERS
from reconcile.exports.table import MONEY_SUFFIX, Table, is_money
from reconcile.timeutil import BUSINESS_TZ, as_utc

BOM = "\ufeff"
# Characters after which a spreadsheet reads a cell as a formula.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# Text gathered before it is handed on.
FLUSH_AT = 64 * 1024


def csv_header(column: str) -> str:
    """``expected_cents`` → ``expected``: CSV money is in reais."""
    return column[: -len(MONEY_SUFFIX)] if is_money(column) else column


def reais(cents: int, separator: str = ".") -> str:
    sign = "-" if cents < 0 else ""
    whole, centavos = divmod(abs(cents), 100)
    return f"{sign}{whole}{separator}{centavos:02d}"


def _local(instant: datetime) -> datetime:
    return as_utc(instant).astimezone(BUSINESS_TZ)


def csv_cell(column: str, value: Any, *, excel: bool = False) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and is_money(column):
        return reais(value, "," if excel else ".")
    if isinstance(value, datetime):
        local = _local(value)
        return local.strftime("%d/%m/%Y %H:%M:%S") if excel else local.isoformat()
    if isinstance(value, date):
        return value.strftime("%d/%m/%Y") if excel else value.isoformat()
    return str(inert(column, value))


def inert(column: str, value: Any) -> Any:
    """``value`` as a spreadsheet may show it: text that starts like a formula gets a
    leading ``'`` (identifiers are never formulas, and keep their exact text)."""
    if isinstance(value, str) and column not in IDENTIFIERS and value.startswith(FORMULA_START):
        return "'" + value
    return value


def csv_chunks(table: Table, *, excel: bool = False) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=";" if excel else ",", lineterminator="\r\n")
    if excel:
        buffer.write(BOM)
    writer.writerow([csv_header(column) for column in table.columns])
    for row in table.rows:
        writer.writerow([csv_cell(column, row[column], excel=excel) for column in table.columns])
        if buffer.tell() >= FLUSH_AT:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return _local(value).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return value


def jsonl_chunks(table: Table) -> Iterator[str]:
    lines: list[str] = []
    size = 0
    for row in table.rows:
        line = json.dumps(
            {column: json_value(row[column]) for column in table.columns},
            ensure_ascii=False,
            separators=(",", ":"),
        )
        lines.append(line + "\n")
        size += len(line) + 1
        if size >= FLUSH_AT:
            yield "".join(lines)
            lines, size = [], 0
    yield "".join(lines)
