"""Whole-scenario checks: refs are unique and every reference makes sense when it happens.

Done at load time, walking the day in order, so a wrong file fails with the event's
location (``events[7]``) before anything reaches the provider, never halfway through.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import time
from decimal import Decimal
from typing import TYPE_CHECKING, Final, TypeVar

from sandbox.automatico_records import ATTEMPT_REJECTION_CODES
from sandbox.scenario import events as ev

if TYPE_CHECKING:
    from sandbox.scenario.model import Scenario, Step

_MAX_ATTEMPTS: Final = {"NAO_PERMITE": 1, "PERMITE_3R_7D": 4}
T = TypeVar("T")


def _seconds(at: time) -> int:
    return at.hour * 3600 + at.minute * 60 + at.second


@dataclass
class _Pix:
    amount: Decimal
    refunded: Decimal = Decimal(0)  # refunds not refused, as the ledger counts them


@dataclass
class _Payout:
    amount: Decimal
    status: str = "PROCESSING"
    returned: Decimal = Decimal(0)


@dataclass
class _Cobr:
    amount: Decimal
    max_attempts: int
    attempts: int = 0
    paid: bool = False


@dataclass
class _Books:
    charges: dict[str, tuple[Decimal, int | None]] = field(default_factory=dict)  # expiry (s)
    recurrences: dict[str, tuple[str, int]] = field(default_factory=dict)  # policy, start
    cobrs: dict[str, _Cobr] = field(default_factory=dict)
    pix: dict[str, _Pix] = field(default_factory=dict)
    refunds: dict[str, tuple[str, Decimal, str]] = field(default_factory=dict)
    payouts: dict[str, _Payout] = field(default_factory=dict)
    infractions: dict[str, str] = field(default_factory=dict)


def _unique_refs(scenario: Scenario) -> None:
    seen: dict[str, str] = {}
    for step in scenario.timeline():
        ref = getattr(step.item, "ref", None)
        if ref is None:
            continue
        if ref in seen:
            raise ValueError(f"{step.location}: ref {ref!r} is already used by {seen[ref]}")
        seen[ref] = step.location


def _get(table: dict[str, T], ref: str, what: str, step: Step) -> T:
    if ref not in table:
        kind = getattr(step.item, "type", None)
        where = f"{step.location} ({kind})" if kind else step.location
        raise ValueError(f"{where}: no {what} {ref!r} exists by {step.at:%H:%M:%S}")
    return table[ref]


def check_references(scenario: Scenario) -> None:
    """Raise ``ValueError`` naming the first step that cannot happen as written."""
    from sandbox.scenario.model import Cob, Cobv, Recurrence, RecurringCharge

    _unique_refs(scenario)
    books = _Books()
    for step in scenario.timeline():
        item = step.item
        if isinstance(item, Cob):
            books.charges[item.ref] = (item.amount, _seconds(item.at) + item.expires_in)
        elif isinstance(item, Cobv):
            # Paid by default with what is due on the day (on the file's date, or today).
            books.charges[item.ref] = (item.due_on(scenario.business_date()), None)
        elif isinstance(item, Recurrence):
            books.recurrences[item.ref] = (item.retry_policy, item.start_in_days)
        elif isinstance(item, RecurringCharge):
            policy, start = _get(books.recurrences, item.recurrence, "recurrence", step)
            if item.due_in_days < start:
                raise ValueError(
                    f"{step.location}: due before recurrence {item.recurrence!r} starts "
                    f"(its start_in_days is {start})"
                )
            books.cobrs[item.ref] = _Cobr(item.amount, _MAX_ATTEMPTS[policy])
        else:
            _check_event(books, step, item)


def _check_event(books: _Books, step: Step, item: ev.Event) -> None:
    def fail(message: str) -> ValueError:
        return ValueError(f"{step.location} ({item.type}): {message}")

    if isinstance(item, ev.PixReceived):
        books.pix[item.ref] = _Pix(item.amount)
    elif isinstance(item, ev.ChargePayment):
        amount, expiry = _get(books.charges, item.charge, "charge", step)
        if expiry is not None and _seconds(item.at) >= expiry:
            raise fail(f"charge {item.charge!r} has expired by then (see its expires_in)")
        if item.amount is None and amount <= 0:
            raise fail(f"nothing is due on {item.charge!r} that day: give an amount")
        books.pix[item.ref] = _Pix(item.amount or amount)
    elif isinstance(item, ev.Refund):
        pix = _get(books.pix, item.pix, "Pix", step)
        if item.status != "NAO_REALIZADO":
            if pix.refunded + item.amount > pix.amount:
                raise fail(f"refunds of {item.pix!r} would exceed its amount, {pix.amount}")
            pix.refunded += item.amount
        books.refunds[item.ref] = (item.pix, item.amount, item.status)
    elif isinstance(item, ev.RefundSettled):
        pix_ref, amount, status = _get(books.refunds, item.refund, "refund", step)
        if status != "EM_PROCESSAMENTO":
            raise fail(f"refund {item.refund!r} is already {status}")
        if item.status == "NAO_REALIZADO":
            books.pix[pix_ref].refunded -= amount
        books.refunds[item.refund] = (pix_ref, amount, item.status)
    elif isinstance(item, ev.Payout):
        books.payouts[item.ref] = _Payout(item.amount)
    elif isinstance(item, ev.PayoutSettled | ev.PayoutRejected | ev.PayoutCanceled):
        payout = _get(books.payouts, item.payout, "payout", step)
        if payout.status != "PROCESSING":
            raise fail(f"payout {item.payout!r} is already {payout.status}")
        payout.status = {"payout_settled": "LIQUIDATED", "payout_rejected": "REJECTED"}.get(
            item.type, "CANCELED"
        )
    elif isinstance(item, ev.PayoutRefunded):
        payout = _get(books.payouts, item.payout, "payout", step)
        if payout.status not in ("LIQUIDATED", "PARTIALLY_REFUNDED"):
            raise fail(f"payout {item.payout!r} is {payout.status}; only settled ones return")
        if payout.returned + item.amount > payout.amount:
            raise fail(f"returns of {item.payout!r} would exceed its amount, {payout.amount}")
        payout.returned += item.amount
        full = payout.returned == payout.amount
        payout.status = "REFUNDED" if full else "PARTIALLY_REFUNDED"
    elif isinstance(item, ev.InfractionOpened):
        pix = _get(books.pix, item.pix, "Pix", step)
        if item.amount is not None and item.amount > pix.amount:
            raise fail(f"the disputed amount exceeds the Pix's, {pix.amount}")
        if item.blocked is not None and item.blocked > (item.amount or pix.amount):
            raise fail(f"blocked exceeds the disputed amount, {item.amount or pix.amount}")
        books.infractions[item.ref] = "OPEN"
    elif isinstance(item, ev.InfractionClosed):
        if _get(books.infractions, item.infraction, "infraction", step) != "OPEN":
            raise fail(f"infraction {item.infraction!r} is already closed")
        books.infractions[item.infraction] = "CLOSED"
    elif isinstance(item, ev.RecurringChargeAttempt):
        cobr = _get(books.cobrs, item.charge, "recurring charge", step)
        if cobr.paid or cobr.attempts >= cobr.max_attempts:
            raise fail(f"recurring charge {item.charge!r} takes no more attempts")
        if item.rejection_code not in ATTEMPT_REJECTION_CODES:
            known = ", ".join(sorted(ATTEMPT_REJECTION_CODES))
            raise fail(f"rejection_code must be one of {known}")
        cobr.attempts += 1
        cobr.paid = item.succeed
        if item.ref is not None:
            books.pix[item.ref] = _Pix(cobr.amount)
    elif isinstance(item, ev.ForgedPix) and item.charge is not None:
        _get(books.charges, item.charge, "charge", step)
