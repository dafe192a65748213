"""A rich summary of a scenario's ground truth, for people at a terminal."""

from __future__ import annotations

from datetime import datetime

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.table import Table

from sandbox.scenario.fields import from_cents
from sandbox.scenario.model import BUSINESS_TZ
from sandbox.scenario.outcome import ScenarioOutcome


def _money(cents: int) -> str:
    return f"{from_cents(cents):,.2f}"


def _local(at: datetime) -> str:
    return at.astimezone(BUSINESS_TZ).strftime("%H:%M:%S")


def _overview(outcome: ScenarioOutcome) -> Table:
    totals = outcome.totals
    table = Table(title=f"{escape(outcome.name)} — {outcome.date} (America/Sao_Paulo)")
    table.add_column("day")
    table.add_column("BRL", justify="right")
    table.add_row("opening balance", _money(outcome.opening_balance_cents))
    table.add_row("credits", _money(totals.credits_cents))
    table.add_row("debits", _money(totals.debits_cents))
    table.add_row("  of which refunds sent", _money(totals.refunds_cents))
    table.add_row("[bold]closing balance[/]", f"[bold]{_money(outcome.closing_balance_cents)}[/]")
    if outcome.final_balance_cents != outcome.closing_balance_cents:
        # Pix booked across midnight: the next day's statement has them.
        table.add_row("balance with next-day lines", _money(outcome.final_balance_cents))
    return table


def _movements(outcome: ScenarioOutcome) -> Table:
    table = Table("time", "ref", "kind", "key", "amount", "status", "booked", title="Movements")
    for m in outcome.movements:
        sign = "" if m.credit else "-"
        booked = "yes" if m.booked else "no"
        if m.booked_at is not None and m.booked_at != m.at:
            booked = f"at {_local(m.booked_at)}"
            if m.booked_at >= outcome.day_end:
                booked += " next day"
        table.add_row(
            _local(m.at),
            escape(m.ref),
            m.kind,
            m.key,
            f"{sign}{_money(m.amount_cents)}",
            m.status + (f" ({m.error_code})" if m.error_code else ""),
            booked,
        )
    return table


def _payments(outcome: ScenarioOutcome) -> Table:
    table = Table(
        "ref", "kind", "txid", "amount", "due", "paid", "refunded", "outcome", title="Charges"
    )
    for p in outcome.payments:
        table.add_row(
            escape(p.ref),
            p.kind,
            p.txid,
            _money(p.amount_cents),
            _money(p.due_cents),
            _money(p.paid_cents),
            _money(p.refunded_cents),
            p.outcome,
        )
    return table


def _notifications(outcome: ScenarioOutcome) -> Table:
    table = Table("id", "time", "to", "fault", "acked", "about", title="Notifications")
    for n in outcome.notifications:
        fault: str = n.fault if n.fault != "none" else ""
        if n.forged:
            fault = f"forged {fault}".strip()
        if n.delay_seconds is not None:
            fault += f" {n.delay_seconds:g}s"
        acked = f"{n.copies_acknowledged}/{n.copies_planned}" if n.copies_planned else "-"
        table.add_row(n.id, _local(n.at), n.channel, fault, acked, escape(n.identity))
    return table


def _api_faults(outcome: ScenarioOutcome) -> Table:
    table = Table("time", "api", "fault", "armed after POST #", title="API faults")
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
