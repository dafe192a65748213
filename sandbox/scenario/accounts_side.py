"""The accounts (cash-out) side of a scenario's day: payouts and MED infractions."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from sandbox.accounts.infractions import DebitLine
from sandbox.accounts.notifications import (
    cashout_notification,
    infraction_notification,
    refund_notification,
    transfer_notification,
)
from sandbox.clock import parse_rfc3339
from sandbox.scenario import events as ev
from sandbox.scenario.fields import from_cents, to_cents
from sandbox.scenario.model import Step
from sandbox.scenario.outcome import InfractionRecord, Movement

if TYPE_CHECKING:
    from sandbox.scenario.book import DayBook


def apply_accounts_event(book: DayBook, step: Step, item: ev.Event, when: datetime) -> None:
    accounts = book.provider.accounts
    if isinstance(item, ev.Payout):
        payment = accounts.create_payment(
            item.ref, item.amount, pix_key=item.pix_key, description=item.description
        )
        book.refs[item.ref] = item.ref
        book.record(
            Movement(
                ref=item.ref,
                kind="payout",
                key=item.ref,
                amount_cents=to_cents(item.amount),
                status=str(payment["status"]),
                booked=False,  # money leaves only when the payout is LIQUIDATED
                credit=False,
                at=when,
                end_to_end_id=str(payment["endToEndId"]),
                idempotency_key=item.ref,
            )
        )
    elif isinstance(item, ev.PayoutSettled):
        payment = accounts.settle_payment(item.payout)
        book.update(item.payout, status=payment["status"], booked=True, at=when)
        book.notify("accounts", transfer_notification(accounts, item.payout), step)
    elif isinstance(item, ev.PayoutRejected | ev.PayoutCanceled):
        if isinstance(item, ev.PayoutRejected):
            payment = accounts.reject_payment(item.payout, item.error_code)
        else:
            payment = accounts.cancel_payment(item.payout)
        book.update(item.payout, status=payment["status"], error_code=payment["errorCode"])
        # Failures before settlement come as CASHOUT, in the provider's terse shape.
        book.notify("accounts", cashout_notification(accounts, item.payout), step)
    elif isinstance(item, ev.PayoutRefunded):
        _payout_returned(book, step, item, when)
    elif isinstance(item, ev.InfractionOpened | ev.InfractionClosed):
        _infraction(book, step, item, when)
    else:
        raise TypeError(f"unhandled scenario step {type(item).__name__}")


def _payout_returned(book: DayBook, step: Step, item: ev.PayoutRefunded, when: datetime) -> None:
    accounts = book.provider.accounts
    payment = accounts.refund_payment(item.payout, item.amount)
    payout = book.update(item.payout, status=payment["status"])
    returned = payment["refunds"][-1]
    ref = f"{item.payout}#return{len(payment['refunds'])}"
    book.refs[ref] = str(returned["endToEndId"])
    book.record(
        Movement(
            ref=ref,
            kind="payout_return",
            key=str(returned["endToEndId"]),
            amount_cents=to_cents(item.amount),
            status=str(returned["status"]),
            booked=True,
            credit=True,
            at=when,
            end_to_end_id=str(returned["endToEndId"]),
            original_end_to_end_id=payout.end_to_end_id,
            idempotency_key=item.payout,
        )
    )
    book.notify("accounts", refund_notification(accounts, item.payout), step)


def _infraction(
    book: DayBook, step: Step, item: ev.InfractionOpened | ev.InfractionClosed, when: datetime
) -> None:
    accounts = book.provider.accounts
    debit_line: DebitLine | None = None
    if isinstance(item, ev.InfractionOpened):
        pix = book.movements[item.pix]
        amount = item.amount if item.amount is not None else from_cents(pix.amount_cents)
        case = accounts.open_infraction(pix.key, amount, reason=item.reason, blocked=item.blocked)
        ref = item.ref
        book.refs[ref] = str(case["id"])
    else:
        ref = item.infraction
        if item.debit:
            debit_line = item.debit_line or "full"
            case = accounts.close_infraction(book.refs[ref], True, debit_line=debit_line)
            disputed = str(case["endToEndId"])
            book.record(
                Movement(
                    ref=ref,
                    kind="infraction_debit",
                    key=str(case["id"]),
                    amount_cents=to_cents(case["amount"]),
                    status=str(case["status"]),
                    booked=True,
                    credit=False,
                    at=when,
                    # What the statement line carries, as the provider booked it.
                    end_to_end_id=disputed if debit_line == "end_to_end_id" else None,
                    original_end_to_end_id=disputed,
                    debit_line=debit_line,
                )
            )
        else:
            case = accounts.close_infraction(book.refs[ref], False)
    opened = parse_rfc3339(str(case["createdAt"]))
    deadline = parse_rfc3339(str(case["analysisDeadline"]))
    assert opened is not None
    assert deadline is not None
    book.infractions[ref] = InfractionRecord(
        ref=ref,
        id=str(case["id"]),
        end_to_end_id=str(case["endToEndId"]),
        amount_cents=to_cents(case["amount"]),
        status=str(case["status"]),
        debited=case["analysisResult"] == "AGREED",
        blocked_cents=to_cents(case["blockedAmount"]),
        opened_at=opened,
        analysis_deadline=deadline,
        debit_line=debit_line,
    )
    book.notify("accounts", infraction_notification(accounts, str(case["id"])), step)
