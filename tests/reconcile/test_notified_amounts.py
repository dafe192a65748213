"""Money only a notification stated is no money that moved: a Pix, refund, credit or payout
return the provider's API does not stand behind, and a payout it does not know, carry the
notified amount in ``expected`` and in ``actual`` only what a statement line booked of
them (nothing when none did), so that a sum of ``actual`` is money that moved; a line
nobody notified moved as booked. Their actions still say how much. On SQLite and
PostgreSQL."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from sqlalchemy import Engine, update
from sqlmodel import col

from reconcile.cases import case_rows
from reconcile.db import session_scope
from reconcile.models import AccountMovement, Confirmation, PixReceived, PixRefund, Source
from reconcile.nightly import reconcile_day
from reconcile.payloads.accounts import accounts_items
from reconcile.timeutil import business_day_bounds
from tests.factories import e2e_id
from tests.reconcile.day_book import DayBook, reais, verdicts_of

PAST = date(2026, 3, 10)
AFTER = business_day_bounds(PAST)[1] + timedelta(hours=2)
FORGED_RTR = "D99999999202603101400forgedrtr01"
RETURN_E2E = "D99999999202603101500forgedret01"


def _set(engine: Engine, model: Any, column: Any, value: str, confirmation: Confirmation) -> None:
    with session_scope(engine) as session:
        session.execute(
            update(model).where(col(column) == value).values(confirmation=confirmation.value)
        )


def _refund(book: DayBook, rtr: str, cents: int, clock: str) -> dict[str, Any]:
    made = book.at(clock).isoformat()
    return {
        "id": rtr[-6:],
        "rtrId": rtr,
        "valor": reais(cents),
        "natureza": "ORIGINAL",
        "status": "DEVOLVIDO",
        "horario": {"solicitacao": made, "liquidacao": made},
    }


def _a_day_of_forgeries(engine: Engine) -> tuple[DayBook, dict[str, str]]:
    """Real money around notifications the provider does not stand behind: one of them
    (a Pix) booked by the statement all the same."""
    book = DayBook(engine, PAST)
    real = book.pix(15_000, "09:00")
    book.line("PIX_RECEIVED", 15_000, "09:01", credit=True, endToEndId=real)
    forged = book.pix(9_900, "12:00", polled=False)
    booked = book.pix(6_000, "12:30", polled=False)
    book.line("PIX_RECEIVED", 6_000, "12:31", credit=True, endToEndId=booked)
    refunded = book.pix(
        4_000, "13:00", polled=False, refunds=[_refund(book, FORGED_RTR, 1_500, "14:00")]
    )
    book.line("PIX_RECEIVED", 4_000, "13:01", credit=True, endToEndId=refunded)
    book.transfer(book.payout_data("po-real", 70_000, "10:00"))
    book.line("PIX_PAYMENT", 70_000, "10:01", credit=False, idempotencyKey="po-real")
    book.transfer(book.payout_data("po-forged", 500_000, "11:00"))
    keyless = book.payout_data(None, 3_000, "11:30")
    keyless["id"] = "no-key-at-all"
    book.transfer(keyless)
    returned = book.payout_data("po-returned", 2_500, "15:00")
    book.transfer(returned)
    listed = [
        {
            "endToEndId": RETURN_E2E,
            "status": "LIQUIDATED",
            "pixRefundAmount": reais(2_500),
            "createdAt": book.at("15:10").isoformat(),
        }
    ]
    book._store(
        accounts_items(
            {"type": "REFUND", "data": {**returned, "status": "REFUNDED", "refunds": listed}}
        ),
        Source.WEBHOOK,
    )
    credit = {
        "id": "rcv-forged",
        "endToEndId": e2e_id(),
        "status": "LIQUIDATED",
        "createdAt": book.at("16:00").isoformat(),
        "payment": {"currency": "BRL", "amount": reais(7_700)},
        "creditDebitType": "CREDIT",
    }
    book._store(accounts_items({"type": "RECEIVE", "data": credit}), Source.WEBHOOK)
    book.confirm_all_pix()
    book.confirm_all_refunds()
    book.confirm_all_movements()
    for e2e in (forged, booked):
        _set(engine, PixReceived, PixReceived.end_to_end_id, e2e, Confirmation.UNCONFIRMED_WEBHOOK)
    _set(engine, PixRefund, PixRefund.rtr_id, FORGED_RTR, Confirmation.UNCONFIRMED_WEBHOOK)
    for reference, confirmation in (
        ("id-po-forged", Confirmation.UNCONFIRMED_WEBHOOK),
        ("no-key-at-all", Confirmation.UNVERIFIABLE),
        ("id-po-returned", Confirmation.UNCONFIRMED_WEBHOOK),
        ("rcv-forged", Confirmation.UNCONFIRMED_WEBHOOK),
    ):
        _set(engine, AccountMovement, AccountMovement.reference, reference, confirmation)
    return book, {"real": real, "forged": forged, "booked": booked, "refunded": refunded}


def test_what_only_a_notification_stated_is_expected_never_actual(engine: Engine) -> None:
    _, pix = _a_day_of_forgeries(engine)

    result = reconcile_day(engine, PAST, now=AFTER)

    verdicts = verdicts_of(engine, result)

    def amounts(subject: str, ref: str) -> tuple[str, int | None, int | None]:
        row = verdicts[(subject, ref)]
        assert row.exception, row
        return row.status, row.expected_cents, row.actual_cents

    assert amounts("movement", pix["forged"]) == ("unconfirmed_webhook", 9_900, None)
    # Booked by the statement: that money moved, whoever notified it.
    assert amounts("movement", pix["booked"]) == ("unconfirmed_webhook", 6_000, 6_000)
    assert amounts("movement", FORGED_RTR) == ("unconfirmed_webhook", 1_500, None)
    assert amounts("movement", "credit:rcv-forged") == ("unconfirmed_webhook", 7_700, None)
    assert amounts("movement", f"return:{RETURN_E2E}") == ("unknown_to_provider", 2_500, None)
    assert amounts("payout", "po-forged") == ("unknown_to_provider", 500_000, None)
    assert amounts("payout", "no-key-at-all") == ("unknown_to_provider", 3_000, None)
    assert amounts("payout", "po-returned") == ("unknown_to_provider", 2_500, None)

    # What moved, as the statement shows it: money in and money out, each summed over
    # the day's verdicts.
    def moved(subject: str, refs: set[str] | None = None) -> int:
        return sum(
            row.actual_cents or 0
            for (s, ref), row in verdicts.items()
            if s == subject and (refs is None or ref in refs)
        )

    money_in = {ref for (s, ref) in verdicts if s == "movement" and ref != FORGED_RTR}
    assert moved("movement", money_in) == 15_000 + 6_000 + 4_000
    assert moved("movement", {FORGED_RTR}) == 0
    assert moved("payout") == 70_000

    # Each case still says how much was notified.
    with session_scope(engine) as session:
        actions = {row["ref"]: row["action"] for row in case_rows(session, day=PAST)}
    assert "R$ 99,00" in actions[pix["forged"]]
    assert "R$ 15,00" in actions[FORGED_RTR]
    assert "R$ 77,00" in actions["credit:rcv-forged"]
    assert "R$ 25,00" in actions[f"return:{RETURN_E2E}"]
    assert "R$ 5.000,00" in actions["po-forged"]
    assert "R$ 30,00" in actions["no-key-at-all"]
    assert "R$ 25,00" in actions["po-returned"]


def test_a_line_nobody_notified_is_money_that_moved(engine: Engine) -> None:
    """A Pix received, a refund, a payout and a payout return the statement booked that no
    notification or poll told of: each moved as booked, so ``actual`` says so."""
    book = DayBook(engine, PAST)
    pix = e2e_id()
    book.line("PIX_RECEIVED", 4_000, "09:00", credit=True, endToEndId=pix)
    book.line("PIX_REFUND_SENT", 1_200, "10:00", credit=False, endToEndId=FORGED_RTR)
    book.line("PIX_PAYMENT", 30_000, "11:00", credit=False, idempotencyKey="po-unknown")
    book.line("PIX_PAYMENT_REFUND", 2_500, "12:00", credit=True, endToEndId=RETURN_E2E)

    result = reconcile_day(engine, PAST, now=AFTER)

    verdicts = verdicts_of(engine, result)
    found = {
        key: (row.status, row.expected_cents, row.actual_cents)
        for key, row in verdicts.items()
        if key[0] in ("movement", "payout")
    }
    assert found == {
        ("movement", pix): ("missing_webhook", 4_000, 4_000),
        ("movement", FORGED_RTR): ("missing_webhook", 1_200, 1_200),
        ("payout", "po-unknown"): ("missing_webhook", 30_000, 30_000),
        ("movement", f"return:{RETURN_E2E}"): ("missing_webhook", 2_500, 2_500),
    }
    with session_scope(engine) as session:
        actions = {row["ref"]: row["action"] for row in case_rows(session, day=PAST)}
    assert "R$ 40,00" in actions[pix]
    assert "R$ 12,00" in actions[FORGED_RTR]
    assert "R$ 300,00" in actions["po-unknown"]
