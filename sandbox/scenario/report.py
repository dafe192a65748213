"""A rich summary of a scenario's ground truth, for people at a terminal.

In Brazilian conventions, as pixrecon's own human output: money as ``R$ 1.234,56``, the
day as ``02/03/2026``, times of day in America/Sao_Paulo. Every table fits 80 columns
without cutting an identifier or a figure short: cells hold two lines where a row would be
too wide, and an identifier wider than its column wraps after a ``:`` or ``_`` (folded
only as a last resort), never ending in ``…``.
"""

from __future__ import annotations

import re
from datetime import date, datetime

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from sandbox.scenario.model import BUSINESS_TZ
from sandbox.scenario.outcome import Movement, ScenarioOutcome


# The sandbox stands in for the provider and imports nothing of the product
# (tests/test_layering.py), so it cannot use reconcile.formats; these two give the same
# text as its brl and br_date (tests/sandbox/test_scenario_report.py checks that they do).
def brl(cents: int) -> str:
    """``R$ 1.234,56``, a minus sign before the currency."""
    sign = "-" if cents < 0 else ""
    reais, centavos = divmod(abs(cents), 100)
    grouped = f"{reais:,}".replace(",", ".")
    return f"{sign}R$ {grouped},{centavos:02d}"


def br_date(day: date) -> str:
    # Not strftime: glibc does not pad a year before 1000 (as reconcile.formats does it).
    return f"{day.day:02d}/{day.month:02d}/{day.year:04d}"


def _local(at: datetime) -> str:
    return at.astimezone(BUSINESS_TZ).strftime("%H:%M:%S")


# Where an identifier may break, best first: after a ``:`` (between the parts of a key),
# then after a space or ``_`` (inside a status such as ``PARTIALLY_REFUNDED``).
_BREAKS = (re.compile(r"[^:]*:|[^:]+"), re.compile(r"[^ _]*[ _]|[^ _]+"))


def _pack(text: str, width: int, level: int = 0) -> list[str]:
    """``text`` in lines of at most ``width`` cells, broken at the best places that do;
    a part with nowhere left to break stays whole (the cell then folds it)."""
    if cell_len(text) <= width or level == len(_BREAKS):
        return [text]
    lines: list[str] = []
    current = ""
    for part in _BREAKS[level].findall(text):
        if cell_len(part.rstrip()) > width:
            if current:
                lines.append(current.rstrip())
            *whole, current = _pack(part, width, level + 1)
            lines.extend(whole)
        elif current and cell_len(current + part.rstrip()) > width:
            lines.append(current.rstrip())
            current = part
        else:
            current += part
    return [*lines, current.rstrip()]


def _narrowest(text: str) -> int:
    parts = [text]
    for pattern in _BREAKS:
        parts = [piece for part in parts for piece in pattern.findall(part)]
    return max((cell_len(part.rstrip()) for part in parts), default=0)


class _Lines:
    """One cell of identifiers, one to a line, the first ``style``d and the others
    ``secondary``. A line wider than its column breaks after a ``:`` if it can, else after
    a space or ``_``, and is folded only where none of those is left: a key like
    ``refund:{rtrId}:{status}`` keeps its rtrId whole."""

    def __init__(self, *lines: str, style: str = "", secondary: str = "") -> None:
        self.lines = lines
        self.style = style
        self.secondary = secondary

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        shortest = max(_narrowest(line) for line in self.lines)
        longest = max(cell_len(line) for line in self.lines)
        return Measurement(shortest, longest).clamp(max_width=options.max_width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        text = Text(overflow="fold", no_wrap=False)
        for index, line in enumerate(self.lines):
            if index:
                text.append("\n")
            style = self.style if index == 0 else self.secondary
            text.append("\n".join(_pack(line, options.max_width)), style)
        yield text


class _Table(Table):
    """A table whose cells fold rather than end in ``…``, and whose ``protect``ed column
    (identifiers, in ``_Lines``) keeps its lines whole as long as every other column can
    still show its longest word: rich narrows the widest column first, which would break
    an endToEndId to spare a status."""

    def __init__(
        self, title: str, *headers: str, protect: int | None = None, right: tuple[int, ...] = ()
    ) -> None:
        super().__init__(title=title)
        self.protect = protect
        for index, header in enumerate(headers):
            self.add_column(
                header,
                justify="right" if index in right else "left",
                overflow="fold",
                no_wrap=index == protect,
            )

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.protect is not None:
            padding = self.padding[1] + self.padding[3]
            others = sum(
                max(
                    Measurement.get(console, options, cell).minimum
                    for cell in (column.header, *column.cells)
                )
                + padding
                for index, column in enumerate(self.columns)
                if index != self.protect
            )
            room = options.max_width - (len(self.columns) + 1) - others - padding
            self.columns[self.protect].max_width = max(room, 8)
        yield from super().__rich_console__(console, options)


def _overview(outcome: ScenarioOutcome) -> Table:
    totals = outcome.totals
    table = _Table(
        f"{escape(outcome.name)} — {br_date(outcome.date)} (America/Sao_Paulo)",
        "day",
        "amount",
        right=(1,),
    )
    table.add_row("opening balance", brl(outcome.opening_balance_cents))
    table.add_row("credits", brl(totals.credits_cents))
    table.add_row("debits", brl(totals.debits_cents))
    table.add_row("  of which refunds sent", brl(totals.refunds_cents))
    table.add_row("[bold]closing balance[/]", f"[bold]{brl(outcome.closing_balance_cents)}[/]")
    if outcome.final_balance_cents != outcome.closing_balance_cents:
        # Pix booked across midnight: the next day's statement has them.
        table.add_row("balance with next-day lines", brl(outcome.final_balance_cents))
    return table


def _booked(m: Movement, outcome: ScenarioOutcome) -> str:
    if m.booked_at is None:
        return "no"
    if m.booked_at == m.at:
        return "yes"
    booked = _local(m.booked_at)
    return booked + ("\nnext day" if m.booked_at >= outcome.day_end else "")


def _movements(outcome: ScenarioOutcome) -> Table:
    table = _Table(
        "Movements", "time\nbooked", "ref\nkey", "kind\nstatus", "amount", protect=1, right=(3,)
    )
    for m in outcome.movements:
        status = m.status + (f" ({m.error_code})" if m.error_code else "")
        table.add_row(
            f"{_local(m.at)}\n{_booked(m, outcome)}",
            _Lines(m.ref, m.key, secondary="dim"),
            _Lines(m.kind, status),
            brl(m.signed_cents),
        )
    return table


def _payments(outcome: ScenarioOutcome) -> Table:
    table = _Table(
        "Charges",
        "ref (kind)\ntxid",
        "amount\ndue",
        "paid\nrefunded",
        "outcome",
        protect=0,
        right=(1, 2),
    )
    for p in outcome.payments:
        table.add_row(
            _Lines(f"{p.ref} ({p.kind})", p.txid, secondary="dim"),
            f"{brl(p.amount_cents)}\n{brl(p.due_cents)}",
            f"{brl(p.paid_cents)}\n{brl(p.refunded_cents)}",
            _Lines(p.outcome),
        )
    return table


def _notifications(outcome: ScenarioOutcome) -> Table:
    table = _Table("Notifications", "id", "time\nto", "fault\nacked", "about")
    for n in outcome.notifications:
        fault: str = n.fault if n.fault != "none" else ""
        if n.forged:
            fault = f"forged {fault}".strip()
        if n.delay_seconds is not None:
            fault += f" {n.delay_seconds:g}s"
        acked = f"{n.copies_acknowledged}/{n.copies_planned}" if n.copies_planned else "-"
        table.add_row(
            n.id,
            f"{_local(n.at)}\n{n.channel}",
            f"{escape(fault)}\n{acked}" if fault else acked,
            _Lines(*n.identity.split(" ")),
        )
    return table


def _api_faults(outcome: ScenarioOutcome) -> Table:
    table = _Table("API faults", "time", "api", "fault", "armed after POST #")
    for f in outcome.api_faults:
        table.add_row(_local(f.at), f.api, f.description, str(f.position))
    return table


def render_outcome(outcome: ScenarioOutcome) -> RenderableType:
    parts: list[RenderableType] = [_overview(outcome), _movements(outcome)]
    if outcome.payments:
        parts.append(_payments(outcome))
    parts.append(_notifications(outcome))
    if outcome.api_faults:
        parts.append(_api_faults(outcome))
    unacked = sum(n.copies_planned - n.copies_acknowledged for n in outcome.notifications)
    lines = [
        f"POSTs sent: {outcome.posts_sent}; copies not acknowledged: {unacked}",
        "Pix only polling can find: " + (", ".join(outcome.pix_only_by_polling) or "none"),
        "forged endToEndIds: " + (", ".join(outcome.forged_end_to_end_ids) or "none"),
        "forged idempotency keys: " + (", ".join(outcome.forged_idempotency_keys) or "none"),
    ]
    keyless = [
        str(n.payload["data"]["id"])
        for n in outcome.forged
        if n.channel == "accounts" and not n.payload["data"].get("idempotencyKey")
    ]
    if keyless:
        lines.append("forged transfers with no key, by id: " + ", ".join(keyless))
    if outcome.cycles:
        missed = [f"{c.recurrence} ({c.id_rec})" for c in outcome.missed_cycles]
        lines.append("recurrence cycles missed today: " + (", ".join(missed) or "none"))
    parts.append("\n".join(escape(line) for line in lines))
    return Group(*parts)


def print_outcome(console: Console, outcome: ScenarioOutcome) -> None:
    console.print(render_outcome(outcome))
