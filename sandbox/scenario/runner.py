"""Run a scenario: apply its day to a provider, deliver the notifications, tell the truth."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from datetime import date, datetime, timedelta

import httpx

from sandbox.automatico_records import is_cycle_date, next_cycle_date
from sandbox.defaults import DEFAULT_TOKEN_LIFETIME_SECONDS
from sandbox.scenario.api_faults import arm, describe
from sandbox.scenario.book import DayBook
from sandbox.scenario.clock import ScenarioClock
from sandbox.scenario.delivery import Sender, plan, play
from sandbox.scenario.fields import Delay, Drop, Duplicate, to_cents
from sandbox.scenario.model import Scenario, day_bounds
from sandbox.scenario.outcome import (
    FEE_CATEGORY,
    ApiFaultRecord,
    DayTotals,
    ExpectedPayment,
    FaultName,
    Movement,
    NotificationRecord,
    RecurrenceCycle,
    ScenarioOutcome,
)
from sandbox.state import SandboxProvider


def scenario_provider(
    scenario: Scenario, *, token_lifetime_seconds: float = DEFAULT_TOKEN_LIFETIME_SECONDS
) -> SandboxProvider:
    """A fresh provider for ``scenario``: its seed, its opening balance, its fees, a
    scenario clock."""
    provider = SandboxProvider(
        seed=scenario.seed,
        clock=ScenarioClock(),
        token_lifetime_seconds=token_lifetime_seconds,
    )
    provider.accounts.opening_balance = scenario.opening_balance
    _charge_fees(scenario, provider)
    return provider


def _charge_fees(scenario: Scenario, provider: SandboxProvider) -> None:
    fees = scenario.fees
    if fees is None:
        provider.accounts.set_pix_received_fee(None)
    else:
        provider.accounts.set_pix_received_fee(fees.pix_received, fees.booking)


def run_scenario(
    scenario: Scenario,
    provider: SandboxProvider,
    *,
    qrcode_webhook_url: str,
    accounts_webhook_url: str,
    secret_header: str | None = None,
    secret: str | None = None,
    client: httpx.Client | None = None,
    day: date | None = None,
    max_attempts: int = 3,
    sleep: Callable[[float], None] = time.sleep,
) -> ScenarioOutcome:
    """Apply the day to ``provider`` (from ``scenario_provider``), then POST its
    notifications with their faults to ``{qrcode_webhook_url}/pix|/rec|/cobr`` and to
    ``accounts_webhook_url``. ``day`` replaces the scenario's date (default: its ``date``,
    else today in America/Sao_Paulo). Returns the ground truth; raises ``ScenarioError``
    when the day cannot happen on this provider."""
    if len(provider.ledger) or len(provider.accounts.payments):
        raise ValueError("run a scenario on a fresh provider: its truth is the whole book")
    day = day if day is not None else scenario.business_date()
    provider.accounts.opening_balance = scenario.opening_balance
    _charge_fees(scenario, provider)
    book = DayBook(scenario, provider, day)
    try:
        book.run()
        payments = _expected_payments(book)
    finally:
        # Even a day that failed halfway must not leave the sandbox's time frozen.
        book.clock.release()

    owned = client is None
    http = client if client is not None else httpx.Client(timeout=5.0)
    try:
        sender = Sender(
            provider,
            qrcode_url=qrcode_webhook_url,
            accounts_url=accounts_webhook_url,
            secret_header=secret_header,
            secret=secret,
            client=http,
            max_attempts=max_attempts,
        )
        sequence, last = plan(
            book.notifications, book.api_faults, reorder=scenario.reorder, seed=scenario.seed
        )
        result = play(
            sequence,
            last,
            sender.post,
            lambda index: arm(provider, book.api_faults[index].fault),
            sleep=sleep,
        )
    finally:
        if owned:
            http.close()

    notifications = []
    for note in book.notifications:
        fault: FaultName = "none"
        planned = 1
        if isinstance(note.delivery, Drop):
            fault, planned = "drop", 0
        elif isinstance(note.delivery, Duplicate):
            fault, planned = "duplicate", note.delivery.copies
        elif isinstance(note.delivery, Delay):
            fault = "delay"
        notifications.append(
            NotificationRecord(
                id=note.id,
                channel=note.channel,
                url=sender.url(note),
                identity=" ".join(note.keys),
                keys=note.keys,
                source=note.source,
                at=note.at,
                fault=fault,
                forged=note.forged,
                copies_planned=planned,
                copies_acknowledged=result.acknowledged[note.id],
                positions=tuple(result.positions[note.id]),
                delay_seconds=note.delivery.seconds if isinstance(note.delivery, Delay) else None,
                payload=note.payload,
            )
        )
    faults = tuple(
        ApiFaultRecord(f.source, f.at, f.fault.api, describe(f.fault), result.fault_positions[i])
        for i, f in enumerate(book.api_faults)
    )
    movements = tuple(sorted(book.movements.values(), key=lambda m: (m.at, m.ref)))
    netted = scenario.fees is not None and scenario.fees.booking == "netted"
    start, end = day_bounds(day)
    totals = _totals(movements, netted=netted, start=start, end=end)
    # Everything booked, whenever: what the balance shows once late lines are in.
    booked = _totals(movements, netted=netted)
    opening = to_cents(scenario.opening_balance)
    return ScenarioOutcome(
        name=scenario.name,
        date=day,
        seed=scenario.seed,
        day_start=start,
        day_end=end,
        opening_balance_cents=opening,
        closing_balance_cents=opening + totals.net_cents,
        totals=totals,
        movements=movements,
        payments=payments,
        infractions=tuple(book.infractions.values()),
        notifications=tuple(notifications),
        api_faults=faults,
        refs=dict(book.refs),
        posts_sent=result.posts,
        final_balance_cents=opening + booked.net_cents,
        cycles=_cycles(scenario, book),
    )


def _totals(
    movements: tuple[Movement, ...],
    *,
    netted: bool,
    start: datetime | None = None,
    end: datetime | None = None,
) -> DayTotals:
    """As the statement of ``[start, end)`` adds up (the whole book without a window): a
    fee is a line of its own, or comes off its Pix's line."""
    by_category: Counter[str] = Counter()
    credits = debits = fees = 0
    for m in movements:
        booked_at = m.booked_at
        if booked_at is None:
            continue
        if (start is not None and booked_at < start) or (end is not None and booked_at >= end):
            continue
        amount = m.amount_cents
        if m.fee_cents:
            fees += m.fee_cents
            if netted:
                amount -= m.fee_cents
            else:
                by_category[FEE_CATEGORY] += m.fee_cents
                debits += m.fee_cents
        by_category[m.statement_category] += amount
        if m.credit:
            credits += amount
        else:
            debits += amount
    return DayTotals(
        credits_cents=credits,
        debits_cents=debits,
        refunds_cents=by_category["PIX_REFUND_SENT"],
        by_category=dict(by_category),
        fees_cents=fees,
    )


def _cycles(scenario: Scenario, book: DayBook) -> tuple[RecurrenceCycle, ...]:
    """The recurrences' cycles on the day, each with the recurring charges due within it.
    The BCB counts a charge in the cycle its ``dataDeVencimento`` falls in (it refuses a
    second one due in the same cycle), so one due days after the cycle's date, before the
    next cycle, collects this cycle; one due on or after the next cycle's date does not."""
    found = []
    for rec in scenario.recurrences:
        start = rec.start_date(book.day)
        if not is_cycle_date(start, rec.periodicity, book.day):
            continue
        following = next_cycle_date(start, rec.periodicity, book.day)
        charges = tuple(
            c.ref
            for c in scenario.recurring_charges
            if c.recurrence == rec.ref and book.day + timedelta(days=c.due_in_days) < following
        )
        found.append(
            RecurrenceCycle(
                recurrence=rec.ref,
                id_rec=book.refs[rec.ref],
                periodicity=rec.periodicity,
                start_date=start,
                due_date=book.day,
                next_date=following,
                amount_cents=to_cents(rec.amount) if rec.amount is not None else None,
                charges=charges,
            )
        )
    return tuple(found)


def _expected_payments(book: DayBook) -> tuple[ExpectedPayment, ...]:
    """Statuses as the provider shows them after the last event; expiry at the day's end."""
    _, end = day_bounds(book.day)
    found = []
    for draft in book.charges.values():
        pix = [m for m in book.movements.values() if m.charge == draft.ref]
        paid = sum(m.amount_cents for m in pix)
        e2eids = {m.key for m in pix}
        refunded = sum(
            m.amount_cents
            for m in book.movements.values()
            if m.kind == "pix_refund" and m.booked and m.original_end_to_end_id in e2eids
        )
        amount = to_cents(draft.amount)
        due = to_cents(draft.due) if pix and draft.due is not None else amount
        if refunded:
            outcome = "refunded" if refunded >= paid else "partially_refunded"
        elif len(pix) > 1:
            outcome = "paid_twice"
        elif pix:
            outcome = "paid" if paid == due else "underpaid" if paid < due else "overpaid"
        else:
            expired = draft.expires_at is not None and draft.expires_at <= end
            outcome = "expired" if expired else "unpaid"
        if draft.kind == "cobr":
            shown = book.provider.automatico.get_cobr(draft.txid)
        else:
            shown = book.provider.charges.get(draft.kind, draft.txid)
        found.append(
            ExpectedPayment(
                ref=draft.ref,
                kind=draft.kind,
                txid=draft.txid,
                amount_cents=amount,
                due_cents=due,
                paid_cents=paid,
                refunded_cents=refunded,
                payments=tuple(draft.payments),
                outcome=outcome,
                provider_status=str(shown["status"]) if shown is not None else "UNKNOWN",
            )
        )
    return tuple(found)
