"""A notification of a payout, or of its returns, that the provider's API contradicts is
never silently dropped, and never counts: the API's word is what the day counts, and the
notification is the day's exception (a possible forgery). On SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, select, update

from reconcile.cases import case_rows
from reconcile.confirmation import confirm_pending_movements
from reconcile.db import session_scope
from reconcile.matching.judgement import DayVerdict
from reconcile.models import AccountMovement, Source
from reconcile.nightly import NightlyResult, reconcile_day
from reconcile.payloads.accounts import accounts_items
from reconcile.provider.errors import NotFound
from reconcile.timeutil import business_day_bounds
from tests.reconcile.day_book import DayBook, reais, verdicts_of

PAST = date(2026, 3, 10)
AFTER = business_day_bounds(PAST)[1] + timedelta(hours=2)
REJECTED_E2E = "E11111111202603101000rejected001"
PAYOUT_E2E = "E11111111202603101100returned001"
RETURN_E2E = "D22222222202603101500returned001"


class _Provider:
    """The accounts API, answering with the payouts it holds by key and by endToEndId."""

    def __init__(self, *payouts: dict[str, Any]) -> None:
        self.payouts = payouts

    def get_payment_by_key(self, key: str) -> dict[str, Any]:
        return self._find("idempotencyKey", key)

    def get_payment(self, end_to_end_id: str) -> dict[str, Any]:
        return self._find("endToEndId", end_to_end_id)

    def _find(self, field: str, value: str) -> dict[str, Any]:
        for payout in self.payouts:
            if payout.get(field) == value:
                return payout
        raise NotFound(value)


def _bridge(result: NightlyResult, category: str) -> tuple[int, int, int]:
    rows = result.summary["bridge"]["categories"]
    row = next(row for row in rows if row["category"] == category)
    return row["webhook_cents"], row["api_cents"], row["statement_cents"]


def _confirm(engine: Engine, provider: _Provider) -> None:
    report = confirm_pending_movements(engine, provider, None, grace=timedelta(0))
    assert not report.interrupted
    assert not report.failed


@pytest.mark.parametrize("first", ["rejection", "settlement"])
def test_a_rejected_payout_notified_as_settled_is_a_break(engine: Engine, first: str) -> None:
    """Its rejection (``CASHOUT``) and a settlement (``TRANSFER``) rank alike: whichever
    came first, and whichever engine sorts them, the API's rejection is the payout's
    state and the settlement it contradicts is the day's exception, with its amount."""
    book = DayBook(engine, PAST)
    paid = book.payout_data("po-ok", 8_000, "09:00")
    book.transfer(paid)
    book.line("PIX_PAYMENT", 8_000, "09:01", credit=False, idempotencyKey="po-ok")
    rejection = accounts_items(
        {
            "type": "CASHOUT",
            "data": {
                "status": "REJECTED",
                "createdAt": book.at("10:00").isoformat(),
                "endToEndId": REJECTED_E2E,
                "idempotencyKey": "po-rej",
                "message": "Payment rejected",
            },
            "errorCode": "AC03",
        }
    )
    settlement = accounts_items(
        {
            "type": "TRANSFER",
            "data": book.payout_data("po-rej", 6_000, "10:00", endToEndId=REJECTED_E2E),
        }
    )
    for items in (rejection, settlement) if first == "rejection" else (settlement, rejection):
        book._store(items, Source.WEBHOOK)
    api = book.payout_data("po-rej", 6_000, "10:00", endToEndId=REJECTED_E2E)
    _confirm(engine, _Provider(paid, {**api, "status": "REJECTED", "errorCode": "AC03"}))

    result = reconcile_day(engine, PAST, now=AFTER)
    payout = verdicts_of(engine, result)[("payout", "po-rej")]
    assert (payout.status, payout.exception) == ("status_mismatch", True)
    assert "API says this payout was not paid out" in payout.reason
    assert "possible forgery" in payout.reason
    # What the notification claimed went out, and nothing moved: a sum of ``actual`` is
    # money that moved.
    assert (payout.expected_cents, payout.actual_cents) == (6_000, 0)
    assert result.verdict == DayVerdict.BREAKS
    # Money the API says never went out is no payout in the API's column; the webhook
    # column says what the notifications claimed, the gap being the exception.
    assert _bridge(result, "payouts") == (14_000, 8_000, 8_000)
    assert _action(engine, "po-rej").startswith(
        "do not count the payout of R$ 60,00 as paid: the provider's API says it was not"
    )


def _action(engine: Engine, ref: str) -> str:
    with session_scope(engine) as session:
        return str(
            next(case["action"] for case in case_rows(session, day=PAST) if case["ref"] == ref)
        )


def _payout_with_returns(book: DayBook, status: str, returned: int) -> dict[str, Any]:
    data = book.payout_data("po-ret", 4_000, "11:00", endToEndId=PAYOUT_E2E)
    listed = {
        "endToEndId": RETURN_E2E,
        "status": "LIQUIDATED",
        "pixRefundAmount": reais(returned),
        "createdAt": book.at("15:00").isoformat(),
    }
    return {**data, "status": status, "refunds": [listed]}


def test_a_return_notified_larger_than_the_api_states_counts_the_apis(engine: Engine) -> None:
    book = DayBook(engine, PAST)
    book.transfer(book.payout_data("po-ret", 4_000, "11:00", endToEndId=PAYOUT_E2E))
    book.line("PIX_PAYMENT", 4_000, "11:01", credit=False, idempotencyKey="po-ret")
    real = _payout_with_returns(book, "PARTIALLY_REFUNDED", 1_000)
    book._store(accounts_items({"type": "REFUND", "data": real}), Source.WEBHOOK)
    book.line("PIX_PAYMENT_REFUND", 1_000, "15:01", credit=True, endToEndId=RETURN_E2E)
    provider = _Provider(real)
    _confirm(engine, provider)
    # The same return, notified again as R$ 40,00 and the payout as returned in full.
    forged = _payout_with_returns(book, "REFUNDED", 4_000)
    book._store(accounts_items({"type": "REFUND", "data": forged}), Source.WEBHOOK)
    _confirm(engine, provider)

    result = reconcile_day(engine, PAST, now=AFTER)
    verdicts = verdicts_of(engine, result)
    returned = verdicts[("movement", "return:" + RETURN_E2E)]
    assert (returned.status, returned.exception) == ("amount_mismatch", True)
    assert "provider's API" in returned.reason
    assert (returned.expected_cents, returned.actual_cents) == (1_000, 4_000)
    # The notification as told, the API's figure as it states it, the statement's credit.
    assert _bridge(result, "payout_returns") == (4_000, 1_000, 1_000)
    # R$ 30,00 of it is still out, as the API states.
    assert verdicts[("payout", "po-ret")].status == "partially_refunded"
    assert result.verdict == DayVerdict.BREAKS
    assert _action(engine, "return:" + RETURN_E2E) == (
        "count the return as the R$ 10,00 the provider's API states, not the R$ 40,00 "
        "notified: find out who sent that notification"
    )


@pytest.mark.parametrize("forged", ["CANCELED", "REJECTED"])
def test_a_settled_payout_notified_again_as_not_paid_counts_as_the_api_states(
    engine: Engine, forged: str
) -> None:
    """A notification of the same payout (its ``id``) with another outcome replaces the
    state the API confirmed — an outcome ranks alike whatever it is. The API still says
    it was paid out: its money counts, matched to its debit, and the notification is the
    day's exception."""
    book = DayBook(engine, PAST)
    paid = book.payout_data("po-ok", 8_000, "09:00", endToEndId=PAYOUT_E2E)
    book.transfer(paid)
    book.line("PIX_PAYMENT", 8_000, "09:01", credit=False, idempotencyKey="po-ok")
    provider = _Provider(paid)
    _confirm(engine, provider)
    book.transfer({**paid, "status": forged, "errorCode": "AC03"})
    _confirm(engine, provider)

    result = reconcile_day(engine, PAST, now=AFTER)
    payout = verdicts_of(engine, result)[("payout", "po-ok")]
    assert (payout.status, payout.exception) == ("status_mismatch", True)
    assert "API says this payout was paid out" in payout.reason
    assert "possible forgery" in payout.reason
    # The statement's debit, against what the notification claimed.
    assert (payout.expected_cents, payout.actual_cents) == (8_000, 8_000)
    assert payout.statement_entry_id is not None
    assert result.verdict == DayVerdict.BREAKS
    # The money the API stands behind went out, as the statement says; the notification
    # claimed it did not.
    assert _bridge(result, "payouts") == (0, 8_000, 8_000)
    # The money left: never "before paying again", which would pay the recipient twice.
    assert _action(engine, "po-ok").startswith(
        "do not pay it again: the payout of R$ 80,00 was paid out, as the provider's API states"
    )


def test_a_rejected_payout_notified_again_as_settled_counts_nothing(engine: Engine) -> None:
    """The other way round, by the same payout's row: the API's rejection holds, and the
    settlement that replaced it is the day's exception, never money out."""
    book = DayBook(engine, PAST)
    book.transfer(book.payout_data("po-ok", 8_000, "09:00"))
    book.line("PIX_PAYMENT", 8_000, "09:01", credit=False, idempotencyKey="po-ok")
    rejected = {
        **book.payout_data("po-rej", 6_000, "10:00", endToEndId=REJECTED_E2E),
        "status": "REJECTED",
        "errorCode": "AC03",
    }
    book.transfer(rejected)
    provider = _Provider(book.payout_data("po-ok", 8_000, "09:00"), rejected)
    _confirm(engine, provider)
    book.transfer({**rejected, "status": "LIQUIDATED", "errorCode": None})
    _confirm(engine, provider)

    result = reconcile_day(engine, PAST, now=AFTER)
    payout = verdicts_of(engine, result)[("payout", "po-rej")]
    assert (payout.status, payout.exception) == ("status_mismatch", True)
    assert "API says this payout was not paid out" in payout.reason
    assert (payout.expected_cents, payout.actual_cents) == (6_000, 0)
    assert result.verdict == DayVerdict.BREAKS
    assert _bridge(result, "payouts")[1:] == (8_000, 8_000)


def test_a_payout_notified_paid_while_the_api_still_processes_it_counts_nothing_yet(
    engine: Engine,
) -> None:
    """Notified LIQUIDATED, PROCESSING at the provider: not the API's money while the API
    may still catch up (pending, asked again), and past the grace period the day's
    exception; the money never counts as the API's."""
    book = DayBook(engine, PAST)
    sale = book.pix(5_000, "08:00")
    book.confirm_all_pix()
    book.line("PIX_RECEIVED", 5_000, "08:00", credit=True, endToEndId=sale)
    notified = book.payout_data("po-early", 8_000, "09:00", endToEndId=PAYOUT_E2E)
    book.transfer(notified)
    provider = _Provider({**notified, "status": "PROCESSING"})
    inside = confirm_pending_movements(engine, provider, None, grace=timedelta(hours=1))
    assert inside.still_pending
    assert not inside.confirmed
    with session_scope(engine) as session:  # asked again, past the grace period
        session.execute(update(AccountMovement).values(next_check_at=AFTER - timedelta(days=1)))
    _confirm(engine, provider)

    with session_scope(engine) as session:
        stored = session.execute(select(AccountMovement)).scalar_one()
    assert (stored.confirmation, stored.confirmed_status) == ("status_mismatch", "PROCESSING")
    result = reconcile_day(engine, PAST, now=AFTER)
    payout = verdicts_of(engine, result)[("payout", "po-early")]
    assert (payout.status, payout.exception) == ("status_mismatch", True)
    assert "it still has it in progress" in payout.reason
    assert _bridge(result, "payouts")[1] == 0
    assert result.verdict == DayVerdict.BREAKS
