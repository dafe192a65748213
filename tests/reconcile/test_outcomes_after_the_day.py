"""A day is judged as things stood at its end. A payout still processing at midnight whose
outcome came the next day stays pending on its own day, whenever that day is asked again;
the day its outcome came judges its money against that day's statement. A refund in
progress at midnight and settled the next day likewise. On SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine

from reconcile.confirmation import confirm_pending_movements
from reconcile.matching.judgement import DayVerdict
from reconcile.models import Source
from reconcile.nightly import NightlyResult, reconcile_day
from reconcile.payloads.accounts import accounts_items
from reconcile.provider.errors import NotFound
from reconcile.timeutil import business_day_bounds
from tests.reconcile.day_book import DayBook, verdicts_of

DAY = date(2026, 3, 10)
KEY = "po-overnight-0310"
ORDINARY = "po-ordinary-0310"


def _payouts(result: NightlyResult) -> dict[str, Any]:
    rows = result.summary["bridge"]["categories"]
    return dict(next(row for row in rows if row["category"] == "payouts"))


def _after(day: date) -> Any:
    return business_day_bounds(day)[1] + timedelta(hours=2)


def _overnight(book: DayBook, status: str, received_on: date, clock: str) -> None:
    """R$ 250,00 to a supplier, created at 22:00 on the first day; ``status`` notified at
    ``clock`` on ``received_on``."""
    data = book.payout_data(KEY, 25_000, "22:00", status=status)
    book.transfer(data, received=book.at(clock, received_on))
    book.confirm_all_movements()


def _first_day(engine: Engine) -> tuple[DayBook, NightlyResult]:
    book = DayBook(engine, DAY)
    book.transfer(book.payout_data(ORDINARY, 10_000, "10:00"), received=book.at("10:00"))
    book.line("PIX_PAYMENT", 10_000, "10:01", credit=False, idempotencyKey=ORDINARY)
    _overnight(book, "PROCESSING", DAY, "22:00")
    first = reconcile_day(engine, DAY, now=_after(DAY))
    assert first.verdict == DayVerdict.RECONCILED_WITH_PENDING
    pending = verdicts_of(engine, first)[("payout", KEY)]
    assert (pending.status, pending.exception, pending.reason) == (
        "pending",
        False,
        "still processing",
    )
    return book, first


def test_a_payout_settled_the_next_day_stays_pending_on_its_own_day(engine: Engine) -> None:
    book, first = _first_day(engine)
    following = book.next_day()
    _overnight(book, "LIQUIDATED", following.day, "09:00")
    following.line("PIX_PAYMENT", 25_000, "09:01", credit=False, idempotencyKey=KEY)

    next_day = reconcile_day(engine, following.day, now=_after(following.day))
    settled = verdicts_of(engine, next_day)[("payout", KEY)]
    assert (settled.status, settled.exception, settled.carried) == ("settled", False, None)
    assert settled.reason == (
        "paid out on an earlier day, where it was still processing: settled and debited today"
    )
    assert (settled.expected_cents, settled.actual_cents) == (25_000, 25_000)
    assert next_day.verdict == DayVerdict.RECONCILED
    figures = _payouts(next_day)
    assert (figures["api_cents"], figures["statement_cents"], figures["difference_cents"]) == (
        25_000,
        25_000,
        0,
    )

    again = reconcile_day(engine, DAY, now=_after(following.day) + timedelta(days=3))
    assert again.verdict == first.verdict == DayVerdict.RECONCILED_WITH_PENDING
    still = verdicts_of(engine, again)[("payout", KEY)]
    assert (still.status, still.exception, still.reason) == ("pending", False, "still processing")
    assert _payouts(again) == _payouts(first)


def test_a_payout_settled_the_next_day_but_never_debited_is_that_days_exception(
    engine: Engine,
) -> None:
    book, _ = _first_day(engine)
    following = book.next_day()
    _overnight(book, "LIQUIDATED", following.day, "09:00")

    next_day = reconcile_day(engine, following.day, now=_after(following.day))
    broken = verdicts_of(engine, next_day)[("payout", KEY)]
    assert (broken.status, broken.exception) == ("status_mismatch", True)
    assert broken.reason.startswith("paid out, but the statement had not booked it by 12/03/2026")
    assert next_day.verdict == DayVerdict.BREAKS

    again = reconcile_day(engine, DAY, now=_after(following.day))
    assert again.verdict == DayVerdict.RECONCILED_WITH_PENDING
    assert verdicts_of(engine, again)[("payout", KEY)].status == "pending"


def test_a_payout_rejected_the_next_day_stays_pending_on_its_own_day(engine: Engine) -> None:
    book, _ = _first_day(engine)
    following = book.next_day()
    _overnight(book, "REJECTED", following.day, "09:00")

    next_day = reconcile_day(engine, following.day, now=_after(following.day))
    assert ("payout", KEY) not in verdicts_of(engine, next_day)
    again = reconcile_day(engine, DAY, now=_after(following.day))
    assert again.verdict == DayVerdict.RECONCILED_WITH_PENDING
    assert verdicts_of(engine, again)[("payout", KEY)].status == "pending"


def test_an_outcome_inside_the_day_or_its_date_lag_is_the_days_own(engine: Engine) -> None:
    """Settled at 00:02, within the default five minutes after midnight, and debited then:
    the payout's own day judges it settled, carried out; the next day does not judge it
    again."""
    book, _ = _first_day(engine)
    following = book.next_day()
    _overnight(book, "LIQUIDATED", following.day, "00:02")
    following.line("PIX_PAYMENT", 25_000, "00:02", credit=False, idempotencyKey=KEY)

    again = reconcile_day(engine, DAY, now=_after(following.day))
    settled = verdicts_of(engine, again)[("payout", KEY)]
    assert (settled.status, settled.carried) == ("settled", "out")
    assert again.verdict == DayVerdict.RECONCILED
    next_day = reconcile_day(engine, following.day, now=_after(following.day))
    carried_in = verdicts_of(engine, next_day)[("payout", KEY)]
    assert (carried_in.status, carried_in.carried) == ("settled", "in")
    assert next_day.verdict == DayVerdict.RECONCILED


def test_a_day_played_after_it_happened_is_judged_as_its_payouts_stand(engine: Engine) -> None:
    """Every state received after the day (a day loaded later, a simulated one): nothing
    says the payout still stood processing at the day's end, so its outcome is the day's."""
    book = DayBook(engine, DAY)
    book.transfer(book.payout_data(ORDINARY, 10_000, "10:00"))
    book.line("PIX_PAYMENT", 10_000, "10:01", credit=False, idempotencyKey=ORDINARY)
    book.transfer(book.payout_data(KEY, 25_000, "22:00", status="PROCESSING"))
    book.transfer(book.payout_data(KEY, 25_000, "22:00", status="REJECTED"))
    book.confirm_all_movements()
    result = reconcile_day(engine, DAY, now=_after(DAY))
    assert verdicts_of(engine, result)[("payout", KEY)].status == "rejected"
    assert result.verdict == DayVerdict.RECONCILED


def test_a_payout_first_heard_of_settled_is_judged_as_it_stands(engine: Engine) -> None:
    """Nothing said it was processing (its notification was lost, polling found it days
    later): its day judges it as the provider states it, and its missing debit is a break."""
    book = DayBook(engine, DAY)
    book.transfer(book.payout_data(ORDINARY, 10_000, "10:00"), received=book.at("10:00"))
    book.line("PIX_PAYMENT", 10_000, "10:01", credit=False, idempotencyKey=ORDINARY)
    book.transfer(
        book.payout_data(KEY, 25_000, "22:00"), received=book.at("09:00", DAY + timedelta(days=3))
    )
    book.confirm_all_movements()
    result = reconcile_day(engine, DAY, now=_after(DAY + timedelta(days=3)))
    verdict = verdicts_of(engine, result)[("payout", KEY)]
    assert (verdict.status, verdict.exception) == ("status_mismatch", True)
    assert result.verdict == DayVerdict.BREAKS


def _quiet_first_day(engine: Engine) -> tuple[DayBook, NightlyResult]:
    """The first day, pixrecon listening all along (a Pix at 23:00 arrived then), and the
    overnight payout created at 22:00 with no word of it that day."""
    book = DayBook(engine, DAY)
    book.transfer(book.payout_data(ORDINARY, 10_000, "10:00"), received=book.at("10:00"))
    book.line("PIX_PAYMENT", 10_000, "10:01", credit=False, idempotencyKey=ORDINARY)
    late_pix = book.pix(3_000, "23:00", received=book.at("23:00"))
    book.line("PIX_RECEIVED", 3_000, "23:00", credit=True, endToEndId=late_pix)
    book.confirm_all_movements()
    book.confirm_all_pix()
    first = reconcile_day(engine, DAY, now=_after(DAY))
    assert first.verdict == DayVerdict.RECONCILED, first.summary["pending"]
    assert ("payout", KEY) not in verdicts_of(engine, first)
    return book, first


@pytest.mark.parametrize(
    ("status", "debited", "there", "day_after"),
    [
        ("LIQUIDATED", True, ("settled", False), DayVerdict.RECONCILED),
        ("LIQUIDATED", False, ("status_mismatch", True), DayVerdict.BREAKS),
        ("REJECTED", False, ("rejected", False), DayVerdict.RECONCILED),
    ],
)
def test_a_payout_first_heard_of_the_next_day_leaves_its_own_day_as_it_stood(
    engine: Engine,
    status: str,
    debited: bool,
    there: tuple[str, bool],
    day_after: DayVerdict,
) -> None:
    """Its day, asked at its end, knew nothing of it; asked again after the outcome came,
    it answers the same. The day it was first heard of judges it whole."""
    book, first = _quiet_first_day(engine)
    following = book.next_day()
    _overnight(book, status, following.day, "09:00")
    if debited:
        following.line("PIX_PAYMENT", 25_000, "09:01", credit=False, idempotencyKey=KEY)

    again = reconcile_day(engine, DAY, now=_after(following.day) + timedelta(days=2))
    assert again.verdict == first.verdict == DayVerdict.RECONCILED
    assert ("payout", KEY) not in verdicts_of(engine, again)
    assert _payouts(again) == _payouts(first)

    next_day = reconcile_day(engine, following.day, now=_after(following.day))
    judged = verdicts_of(engine, next_day)[("payout", KEY)]
    assert (judged.status, judged.exception) == there
    assert next_day.verdict == day_after


def test_a_payout_heard_of_on_its_day_is_no_later_days_even_by_another_notification(
    engine: Engine,
) -> None:
    """Seen processing on its day, rejected the next by a CASHOUT (a row of its own): the
    next day did not first hear of it, and judges nothing of it."""
    book, _ = _quiet_first_day(engine)
    _overnight(book, "PROCESSING", DAY, "22:30")
    following = book.next_day()
    cashout = {
        "idempotencyKey": KEY,
        "status": "REJECTED",
        "createdAt": book.at("22:00").isoformat(),
    }
    items = accounts_items({"type": "CASHOUT", "data": cashout})
    book._store(items, Source.WEBHOOK, following.at("09:00"))
    next_day = reconcile_day(engine, following.day, now=_after(following.day))
    assert ("payout", KEY) not in verdicts_of(engine, next_day)


RTR = "D99999008202603110300refundlate1"


def _refund(book: DayBook, status: str, received_on: date, clock: str, **times: str) -> None:
    """The Pix of R$ 100,00 received at 12:00 on the first day, as polling lists it with
    its refund of R$ 40,00 asked at 23:00 in ``status``."""
    refund = {
        "id": "dev-overnight",
        "rtrId": RTR,
        "valor": "40.00",
        "status": status,
        "horario": {"solicitacao": book.at("23:00").isoformat(), **times},
    }
    book.pix(
        10_000,
        "12:00",
        e2e=PIX_E2E,
        refunds=[refund],
        webhook=False,
        received=book.at(clock, received_on),
    )


PIX_E2E = "E99999008202603101500pixrefund01"


def _first_refund_day(engine: Engine) -> tuple[DayBook, NightlyResult]:
    book = DayBook(engine, DAY)
    _refund(book, "EM_PROCESSAMENTO", DAY, "23:00")
    book.line("PIX_RECEIVED", 10_000, "12:00", credit=True, endToEndId=PIX_E2E)
    first = reconcile_day(engine, DAY, now=_after(DAY))
    assert first.verdict == DayVerdict.RECONCILED_WITH_PENDING
    pending = verdicts_of(engine, first)[("movement", RTR)]
    assert (pending.status, pending.reason) == ("pending", "refund still being processed")
    return book, first


def test_a_refund_refused_within_the_day_is_the_days_own(engine: Engine) -> None:
    book, _ = _first_refund_day(engine)
    _refund(book, "NAO_REALIZADO", DAY, "23:30")

    again = reconcile_day(engine, DAY, now=_after(DAY + timedelta(days=1)))
    assert again.verdict == DayVerdict.RECONCILED
    refused = verdicts_of(engine, again)[("movement", RTR)]
    assert (refused.status, refused.exception) == ("matched", False)


def test_a_refund_settled_the_next_day_stays_pending_on_its_own_day(engine: Engine) -> None:
    book, first = _first_refund_day(engine)
    following = book.next_day()
    _refund(
        book,
        "DEVOLVIDO",
        following.day,
        "09:00",
        liquidacao=following.at("09:00").isoformat(),
    )
    following.line("PIX_REFUND_SENT", 4_000, "09:00", credit=False, endToEndId=RTR)

    next_day = reconcile_day(engine, following.day, now=_after(following.day))
    settled = verdicts_of(engine, next_day)[("movement", RTR)]
    # Listed by polling only, so said so; booked that day, not carried.
    assert (settled.status, settled.exception, settled.carried) == ("missing_webhook", False, None)
    assert (settled.expected_cents, settled.actual_cents) == (4_000, 4_000)
    again = reconcile_day(engine, DAY, now=_after(following.day))
    assert again.verdict == first.verdict
    assert verdicts_of(engine, again)[("movement", RTR)].status == "pending"
    assert again.report["totals"]["refunds"] == first.report["totals"]["refunds"]


def test_a_rejection_that_states_no_amount_carries_what_the_api_confirmed(
    engine: Engine,
) -> None:
    """A CASHOUT rejection seldom repeats the amount: the payout was for what the provider
    confirmed, and finance sees it as what did not go out."""
    from sqlmodel import col, update

    from reconcile.db import session_scope
    from reconcile.models import AccountMovement, Confirmation

    book = DayBook(engine, DAY)
    book.transfer(book.payout_data(ORDINARY, 10_000, "10:00"))
    book.line("PIX_PAYMENT", 10_000, "10:01", credit=False, idempotencyKey=ORDINARY)
    rejected = book.payout_data(KEY, 25_000, "15:00", status="REJECTED")
    del rejected["payment"]
    book.transfer(rejected)
    book.confirm_all_movements()
    with session_scope(engine) as session:
        session.execute(
            update(AccountMovement)
            .where(col(AccountMovement.idempotency_key) == KEY)
            .values(confirmation=Confirmation.CONFIRMED.value, confirmed_amount_cents=25_000)
        )
    result = reconcile_day(engine, DAY, now=_after(DAY))
    verdict = verdicts_of(engine, result)[("payout", KEY)]
    assert (verdict.status, verdict.expected_cents, verdict.actual_cents) == ("rejected", 25_000, 0)


class _SettledAtTheProvider:
    """The accounts API, stating the overnight payout paid out."""

    def __init__(self, book: DayBook) -> None:
        self.payout = book.payout_data(KEY, 25_000, "22:00")

    def get_payment_by_key(self, key: str) -> dict[str, Any]:
        if key != KEY:
            raise NotFound(key)
        return self.payout

    def get_payment(self, end_to_end_id: str) -> dict[str, Any]:
        raise NotFound(end_to_end_id)


def test_a_payout_settled_the_next_day_then_notified_canceled_counts_as_the_api_states(
    engine: Engine,
) -> None:
    """Its outcome came the next day, and a notification of the same payout saying it was
    canceled replaced it: the API still says it was paid out, so that day judges its money
    as it would have, and the notification is its exception."""
    book, _ = _first_day(engine)
    following = book.next_day()
    _overnight(book, "LIQUIDATED", following.day, "09:00")
    following.line("PIX_PAYMENT", 25_000, "09:01", credit=False, idempotencyKey=KEY)
    forged = book.payout_data(KEY, 25_000, "22:00", status="CANCELED")
    book.transfer(forged, received=book.at("10:00", following.day))
    confirm_pending_movements(engine, _SettledAtTheProvider(book), None, grace=timedelta(0))

    next_day = reconcile_day(engine, following.day, now=_after(following.day))
    payout = verdicts_of(engine, next_day)[("payout", KEY)]
    assert (payout.status, payout.exception) == ("status_mismatch", True)
    assert "API says this payout was paid out" in payout.reason
    assert next_day.verdict == DayVerdict.BREAKS
    figures = _payouts(next_day)
    assert (figures["api_cents"], figures["statement_cents"]) == (25_000, 25_000)
