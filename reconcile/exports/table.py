"""What every export is made of: named columns and rows (dicts) read lazily, chunk by
chunk, so that a day of a million movements never sits in memory; and the errors that
stop an export before its first byte."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# Rows read per query: small enough for short transactions, large enough to be cheap.
CHUNK = 5_000
MONEY_SUFFIX = "_cents"

Row = dict[str, Any]


def is_money(column: str) -> bool:
    """A column whose values are integer centavos: any name ending ``_cents``."""
    return column.endswith(MONEY_SUFFIX)


@dataclass(frozen=True)
class Table:
    """``rows`` is consumed once; each row has every column (``None`` when unknown)."""

    name: str
    columns: tuple[str, ...]
    rows: Iterable[Row]
    notice: str | None = None
    """What a reader must know about the rows before using them (a run that claims
    nothing), in one line; ``None`` when nothing."""


class ExportError(Exception):
    """The export cannot be made as asked; the message says why and what to do."""


class NotReconciled(ExportError):
    def __init__(self, day: str) -> None:
        super().__init__(
            f"{day} has no completed reconciliation run: run `pixrecon reconcile --date {day}` "
            "first"
        )


class RunReplaced(ExportError):
    """The day was reconciled again while its verdicts were being read (the newer run
    replaces the older one's verdicts): what was written is incomplete."""

    def __init__(self, day: str) -> None:
        super().__init__(
            f"{day} was reconciled again while it was being exported, so the export is "
            "incomplete: export it again"
        )


class BalanceUnknown(ExportError):
    def __init__(self, day: str) -> None:
        super().__init__(
            f"no balance is known for {day} (no statement line with a running balance and "
            "no balance reading), and an OFX statement must state one: poll the accounts "
            "API (`pixrecon poll`) or export --format csv"
        )
