"""The day's verdict a finance team can sign (docs/design.md §5): every source read and
agreeing, nothing claimed that is not so. Each test writes a day item by item through the
real inbox and handlers (``DayBook``) and asserts the verdicts, the bridge and the exit
code, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import Engine, select, update
from sqlmodel import col

from reconcile.cases import case_rows
from reconcile.confirmation import (
    confirm_listed,
    confirm_pending_movements,
    confirm_pending_refunds,
)
from reconcile.db import session_scope
from reconcile.inbox import store_items
from reconcile.matching.automatico import cycle_on_or_before
from reconcile.matching.judgement import DayVerdict, Sources
from reconcile.models import AccountMovement, Confirmation, PixRefund, Source
from reconcile.nightly import NightlyResult, reconcile_day
from reconcile.payloads.accounts import accounts_items
from reconcile.payloads.automatico import rec_callback_items
from reconcile.payloads.charges import charge_item
from reconcile.payloads.pix import pix_callback_items
from reconcile.processing import process_items
from reconcile.provider.errors import NotFound
from reconcile.timeutil import BUSINESS_TZ, business_day_bounds, utcnow
from tests.reconcile.day_book import DayBook, reais, verdicts_of

PAST = date(2026, 3, 10)
START, END = business_day_bounds(PAST)
AFTER = END + timedelta(hours=2)
"""A run of ``PAST`` once it is over and its date lag has passed."""
# A due-date charge due five days before ``PAST``, 2% fine and 1% a day of interest: an
# original of 100.00 owes 107.00 on ``PAST``.
LATE_TERMS = {
    "multa": {"modalidade": 2, "valorPerc": "2.00"},
    "juros": {"modalidade": 2, "valorPerc": "1.00"},
}
LATE_DUE = (PAST - timedelta(days=5)).isoformat()


def _bridge(result: NightlyResult) -> dict[str, dict[str, Any]]:
    return {row["category"]: row for row in result.report["bridge"]["categories"]}


def _clean_day(book: DayBook) -> str:
    """Pix received (notified, confirmed, booked), a payout and a fee."""
    e2e = book.pix(15_000, "10:00")
    book.confirm_all_pix()
    book.line("PIX_RECEIVED", 15_000, "10:00", credit=True, endToEndId=e2e)
    book.line("PIX_RECEIVED_FEE", 99, "10:00", credit=False, endToEndId=e2e)
    book.transfer(book.payout_data("po-1", 5_000, "11:00"), webhook=False, polled=True)
    book.line("PIX_PAYMENT", 5_000, "11:00", credit=False, idempotencyKey="po-1")
    return e2e


def test_a_quiet_day_after_a_busy_one_closes_at_the_balance_it_opened_with(
    engine: Engine,
) -> None:
    """Nothing moved, by the statement read over the day: its bridge closes at the balance
    the day before left, with a residual of 0, not a bridge of dashes signed off."""
    book = DayBook(engine, PAST)
    _clean_day(book)
    quiet = PAST + timedelta(days=1)
    result = reconcile_day(
        engine,
        quiet,
        now=business_day_bounds(quiet)[1] + timedelta(hours=2),
        sources=Sources(statement_read=True),
    )
    bridge = result.report["bridge"]
    assert (bridge["opening_cents"], bridge["closing_cents"]) == (book.balance, book.balance)
    assert bridge["residual_cents"] == 0
    assert result.verdict is DayVerdict.RECONCILED, result.report


def test_a_quiet_day_before_the_first_line_takes_the_balance_that_line_began_from(
    engine: Engine,
) -> None:
    """The day before the account's first statement line: nothing moved, so it stood at
    the balance that line started from."""
    book = DayBook(engine, PAST)
    opening = book.balance
    _clean_day(book)
    before = PAST - timedelta(days=1)
    result = reconcile_day(
        engine,
        before,
        now=business_day_bounds(before)[1] + timedelta(hours=2),
        sources=Sources(statement_read=True),
    )
    bridge = result.report["bridge"]
    assert (bridge["opening_cents"], bridge["closing_cents"]) == (opening, opening)
    assert result.verdict is DayVerdict.RECONCILED, result.report


def test_a_quiet_day_no_balance_speaks_for_is_incomplete_not_reconciled(engine: Engine) -> None:
    """Read, and nothing moved, but no reading and no line anywhere says what the account
    held: the bridge cannot close, and the day is not called reconciled."""
    result = reconcile_day(engine, PAST, now=AFTER, sources=Sources(statement_read=True))
    assert result.report["bridge"]["residual_cents"] is None
    assert result.verdict is DayVerdict.INCOMPLETE, result.report
    (why,) = result.report["incomplete_because"]
    assert why.startswith(f"no balance is known for {PAST.strftime('%d/%m/%Y')}")


def test_a_clean_day_is_reconciled_and_its_bridge_adds_up(engine: Engine) -> None:
    book = DayBook(engine, PAST)
    opening = book.balance
    _clean_day(book)
    result = reconcile_day(engine, PAST, now=AFTER)
    assert result.verdict is DayVerdict.RECONCILED, result.report
    assert result.exit_code == 0
    bridge = result.report["bridge"]
    assert (bridge["opening_cents"], bridge["closing_cents"]) == (opening, book.balance)
    assert bridge["residual_cents"] == 0
    rows = _bridge(result)
    assert rows["pix_received"]["api_cents"] == rows["pix_received"]["statement_cents"] == 15_000
    assert rows["payouts"]["api_cents"] == rows["payouts"]["statement_cents"] == 5_000
    assert rows["fees"]["statement_cents"] == 99
    assert all(row["difference_cents"] in (0, None) for row in rows.values())


def test_a_statement_line_nobody_explains_is_an_exception(engine: Engine) -> None:
    book = DayBook(engine, PAST)
    _clean_day(book)
    entry = book.line("ADJUSTMENT", 1_234, "15:00", credit=False)
    result = reconcile_day(engine, PAST, now=AFTER)
    line = verdicts_of(engine, result)[("statement", entry)]
    assert (line.status, line.exception, line.actual_cents) == ("unexplained", True, 1_234)
    assert _bridge(result)["other"]["statement_cents"] == 1_234
    assert result.report["bridge"]["residual_cents"] == 1_234
    assert result.verdict is DayVerdict.BREAKS
    assert result.exit_code == 1


def test_a_pix_booked_after_midnight_is_matched_across_the_two_days(engine: Engine) -> None:
    book = DayBook(engine, PAST)
    _clean_day(book)
    late = book.pix(7_000, "23:59:30")
    book.confirm_all_pix()
    # Run right at midnight: the line is not booked yet, the day is waiting for it.
    early = reconcile_day(engine, PAST, now=END + timedelta(seconds=10))
    assert early.verdict is DayVerdict.RECONCILED_WITH_PENDING
    assert early.exit_code == 1
    (waiting,) = early.report["pending"]
    assert (waiting["ref"], waiting["reason"]) == (late, "not in the statement yet")
    assert datetime.fromisoformat(waiting["due_at"]) == END + timedelta(seconds=300)

    next_day = book.next_day()
    next_day.line("PIX_RECEIVED", 7_000, "00:00:30", credit=True, endToEndId=late)
    day = reconcile_day(engine, PAST, now=AFTER)
    assert day.verdict is DayVerdict.RECONCILED, day.report
    row = verdicts_of(engine, day)[("movement", late)]
    assert (row.status, row.exception, row.carried) == ("matched", False, "out")
    assert day.report["carried_out"] == [
        {"subject": "movement", "ref": late, "amount_cents": 7_000}
    ]
    rows = _bridge(day)
    assert rows["pix_received"]["carried_out_cents"] == 7_000
    assert rows["pix_received"]["difference_cents"] == 0

    following = reconcile_day(engine, PAST + timedelta(days=1), now=AFTER + timedelta(days=1))
    row = verdicts_of(engine, following)[("movement", late)]
    assert (row.status, row.exception, row.carried) == ("matched", False, "in")
    assert following.report["carried_in"] == [
        {"subject": "movement", "ref": late, "amount_cents": 7_000}
    ]
    assert following.verdict is DayVerdict.RECONCILED, following.report


class _Payments:
    """The accounts API as the forged payout meets it: it knows ``po-real`` only."""

    def get_payment_by_key(self, key: str) -> dict[str, Any]:
        if key != "po-real":
            raise NotFound(key)
        return {"status": "LIQUIDATED", "payment": {"amount": "20.00"}}

    def get_payment(self, end_to_end_id: str) -> dict[str, Any]:
        raise NotFound(end_to_end_id)


def test_a_forged_payout_never_counts_and_one_without_a_key_stops_nothing(
    engine: Engine,
) -> None:
    today = utcnow().astimezone(BUSINESS_TZ).date()
    book = DayBook(engine, today)
    now = utcnow()
    clock = now.astimezone(BUSINESS_TZ).strftime("%H:%M:%S")
    book.transfer(book.payout_data("po-real", 2_000, clock))
    book.line("PIX_PAYMENT", 2_000, clock, credit=False, idempotencyKey="po-real")
    book.transfer(book.payout_data("po-forged", 500_000, clock))
    keyless = book.payout_data(None, 3_000, clock)
    keyless["id"] = "no-key-at-all"
    book.transfer(keyless)

    inside = reconcile_day(engine, today)
    assert inside.report["totals"]["debits"]["api"] == 0
    pending = {item["ref"]: item for item in inside.report["pending"]}
    assert set(pending) >= {"po-real", "po-forged"}
    assert all(pending[ref]["due_at"] is not None for ref in ("po-real", "po-forged"))

    report = confirm_pending_movements(engine, _Payments(), None, grace=timedelta(0))
    assert report.interrupted is False
    with session_scope(engine) as session:
        states = {
            m.reference: m.confirmation for m in session.execute(select(AccountMovement)).scalars()
        }
    assert states["id-po-real"] == "confirmed"
    assert states["id-po-forged"] == "unconfirmed_webhook"
    assert states["no-key-at-all"] == "unverifiable"

    after = reconcile_day(engine, today)
    verdicts = verdicts_of(engine, after)
    assert verdicts[("payout", "po-forged")].status == "unknown_to_provider"
    assert verdicts[("payout", "po-forged")].exception
    assert verdicts[("payout", "no-key-at-all")].status == "unknown_to_provider"
    assert "cannot be asked" in verdicts[("payout", "no-key-at-all")].reason
    # Only the payout the provider stands behind is money out.
    assert after.report["totals"]["debits"]["api"] == 2_000
    assert after.report["totals"]["debits"]["statement"] == 2_000
    assert after.verdict is DayVerdict.BREAKS, after.report["incomplete_because"]


BACK, KEPT = "E99999008202603101000returned001", "E99999008202603101000unreturned1"


class _ReturnedOnce:
    """A provider that paid out two payouts and saw one of them returned."""

    def get_payment_by_key(self, key: str) -> dict[str, Any]:
        raise NotFound(key)

    def get_payment(self, end_to_end_id: str) -> dict[str, Any]:
        if end_to_end_id == BACK:
            return {"status": "PARTIALLY_REFUNDED", "refunds": [{"endToEndId": "D1"}]}
        return {"status": "LIQUIDATED", "refunds": []}


def test_a_return_counts_only_when_the_provider_states_its_payout_returned(
    engine: Engine,
) -> None:
    """Knowing the payout is not enough: a forged return of a real payout is no money back."""
    book = DayBook(engine, PAST)
    for key, e2e in (("po-back", BACK), ("po-kept", KEPT)):
        returned = {
            "endToEndId": "D" + e2e[1:21] + "retback0001",
            "status": "LIQUIDATED",
            "pixRefundAmount": "10.00",
        }
        data = book.payout_data(
            key, 5_000, "10:00", endToEndId=e2e, status="PARTIALLY_REFUNDED", refunds=[returned]
        )
        book._store(accounts_items({"type": "REFUND", "data": data}), Source.WEBHOOK)
    confirm_pending_movements(engine, _ReturnedOnce(), None, grace=timedelta(0))
    with session_scope(engine) as session:
        states = {
            m.idempotency_key: m.confirmation
            for m in session.execute(select(AccountMovement)).scalars()
        }
    assert states == {"po-back": "confirmed", "po-kept": "status_mismatch"}


def test_a_past_day_promises_no_time_for_a_look_up_the_provider_has_not_answered(
    engine: Engine,
) -> None:
    """Judged at its end, a payout notified after the day (an outage's backlog) is inside
    its grace period in every run of the day: only the provider's answer can make it a
    break, so no time is given for one, however late the day is asked about."""
    book = DayBook(engine, PAST)
    _clean_day(book)
    book.confirm_all_movements()
    book.transfer(book.payout_data("po-late", 2_000, "23:59"))
    for asked in (AFTER, AFTER + timedelta(days=30)):
        result = reconcile_day(engine, PAST, now=asked)
        pending = {item["ref"]: item for item in result.report["pending"]}
        assert pending["po-late"]["due_at"] is None
        assert result.verdict is DayVerdict.RECONCILED_WITH_PENDING, result.report


def test_refunds_found_by_polling_and_refused_ones_say_so(engine: Engine) -> None:
    book = DayBook(engine, PAST)
    settled_rtr, refused_rtr = (
        "D18236120202603101500settled0001",
        "D18236120202603101500refused0001",
    )
    refunds: list[dict[str, Any]] = [
        {
            "id": "r-settled",
            "rtrId": settled_rtr,
            "valor": "30.00",
            "natureza": "ORIGINAL",
            "status": "DEVOLVIDO",
            "horario": {"solicitacao": book.at("15:00").isoformat()},
        },
        {
            "id": "r-refused",
            "rtrId": refused_rtr,
            "valor": "10.00",
            "natureza": "ORIGINAL",
            "status": "NAO_REALIZADO",
            "horario": {"solicitacao": book.at("15:05").isoformat()},
        },
    ]
    e2e = book.pix(10_000, "14:00", webhook=True, polled=False)
    book.confirm_all_pix()
    # The provider's own list brings the refunds; no webhook announced them.
    book.pix(10_000, "14:00", webhook=False, polled=True, e2e=e2e, refunds=refunds)
    book.line("PIX_RECEIVED", 10_000, "14:00", credit=True, endToEndId=e2e)
    book.line("PIX_REFUND_SENT", 3_000, "15:00", credit=False, endToEndId=settled_rtr)
    result = reconcile_day(engine, PAST, now=AFTER)
    verdicts = verdicts_of(engine, result)
    settled = verdicts[("movement", settled_rtr)]
    assert (settled.status, settled.exception) == ("missing_webhook", False)
    refused = verdicts[("movement", refused_rtr)]
    assert (refused.status, refused.exception) == ("matched", False)
    assert "no money moved" in refused.reason
    # What was asked, and nothing moved: a sum of actual amounts is money that moved.
    assert (refused.expected_cents, refused.actual_cents) == (1_000, 0)
    assert verdicts[("movement", e2e)].net_cents == 7_000
    rows = _bridge(result)
    assert rows["refunds_sent"]["api_cents"] == rows["refunds_sent"]["statement_cents"] == 3_000
    assert result.verdict is DayVerdict.RECONCILED, result.report


def test_a_refund_the_api_states_otherwise_is_judged_by_what_the_api_says(
    engine: Engine,
) -> None:
    """Notified as made, one the API says was not made and one it states for less: each
    says so, whether or not the statement booked it, and the action is about the refund."""
    book = DayBook(engine, PAST)
    denied_rtr, smaller_rtr = (
        "D18236120202603101500denied00001",
        "D18236120202603101500smaller0001",
    )
    refunds: list[dict[str, Any]] = [
        {
            "id": rid,
            "rtrId": rtr,
            "valor": reais(cents),
            "natureza": "ORIGINAL",
            "status": "DEVOLVIDO",
            "horario": {"solicitacao": book.at("15:00").isoformat()},
        }
        for rid, rtr, cents in (("r-denied", denied_rtr, 5_000), ("r-smaller", smaller_rtr, 4_000))
    ]
    e2e = book.pix(10_000, "14:00", refunds=refunds)
    book.confirm_all_pix()
    book.line("PIX_RECEIVED", 10_000, "14:00", credit=True, endToEndId=e2e)
    book.line("PIX_REFUND_SENT", 1_500, "15:00", credit=False, endToEndId=smaller_rtr)
    # What the confirm job records when GET /pix/{e2eid} lists them otherwise.
    with session_scope(engine) as session:
        for rtr, confirmation, stated in (
            (denied_rtr, Confirmation.STATUS_MISMATCH, None),
            (smaller_rtr, Confirmation.AMOUNT_MISMATCH, 1_500),
        ):
            session.execute(
                update(PixRefund)
                .where(col(PixRefund.rtr_id) == rtr)
                .values(confirmation=confirmation.value, confirmed_amount_cents=stated)
            )
    result = reconcile_day(engine, PAST, now=AFTER)
    rows = {row["ref"]: row for row in result.report["exceptions"]}
    denied = rows[denied_rtr]
    assert denied["status"] == "status_mismatch"
    assert "API states another outcome" in denied["reason"]
    assert "statement" not in denied["reason"]
    assert denied["action"].startswith("ask the provider about the refund of R$ 50,00")
    # Asked, and nothing moved: a sum of ``actual`` is money that moved.
    assert (denied["expected_cents"], denied["actual_cents"]) == (5_000, 0)
    smaller = rows[smaller_rtr]
    assert smaller["status"] == "amount_mismatch"
    assert (smaller["expected_cents"], smaller["actual_cents"]) == (1_500, 4_000)
    assert "notified R$ 40,00, it stands behind R$ 15,00" in smaller["action"]
    # Money that left, as the API states it: the smaller refund's R$ 15,00, not the
    # R$ 40,00 notified, and nothing of the one it says was not made.
    row = _bridge(result)["refunds_sent"]
    assert (row["webhook_cents"], row["api_cents"], row["statement_cents"]) == (
        9_000,
        1_500,
        1_500,
    )
    assert result.verdict is DayVerdict.BREAKS


@pytest.mark.parametrize("asked", ["look-up", "listing"])
@pytest.mark.parametrize(
    ("notified", "stated", "reason", "action"),
    [
        (
            "DEVOLVIDO",
            "NAO_REALIZADO",
            "a refund notified as made, but the provider's API states the refund "
            "NAO_REALIZADO (not made) (possible forgery)",
            "do not count the refund of R$ 50,00 as sent: the provider's API states the "
            "refund NAO_REALIZADO (not made), so the payer may still be owed it",
        ),
        (
            "NAO_REALIZADO",
            "DEVOLVIDO",
            "a refund notified as not made, but the provider's API states the refund "
            "DEVOLVIDO (made) (possible forgery)",
            "do not refund the payer again: the provider's API states the refund DEVOLVIDO "
            "(made) of R$ 50,00",
        ),
    ],
)
def test_a_refund_the_api_contradicts_names_the_outcome_the_api_states(
    engine: Engine, asked: str, notified: str, stated: str, reason: str, action: str
) -> None:
    """What the API stated of the refund is kept when it contradicts the notification, by a
    look-up of the refunded Pix or by a listing, and the exception says it."""
    book = DayBook(engine, PAST)
    rtr = "D18236120202603101500stated0001"
    refund = {
        "id": "r-stated",
        "rtrId": rtr,
        "valor": reais(5_000),
        "natureza": "ORIGINAL",
        "status": notified,
        "horario": {"solicitacao": book.at("15:00").isoformat()},
    }
    txid = "txstated0000000000000000000000001"
    book.charge("cob", txid, 10_000, "13:00", expiracao=86_400)
    e2e = book.pix(10_000, "14:00", polled=False, refunds=[refund], txid=txid)
    book.confirm_all_pix()
    book.line("PIX_RECEIVED", 10_000, "14:00", credit=True, endToEndId=e2e)
    answer = {
        "endToEndId": e2e,
        "valor": reais(10_000),
        "horario": book.at("14:00").isoformat(),
        "devolucoes": [{**refund, "status": stated}],
    }

    class Api:
        def get_pix(self, wanted: str) -> dict[str, Any]:
            assert wanted == e2e
            return answer

    if asked == "look-up":
        report = confirm_pending_refunds(engine, Api(), grace=timedelta(0))
    else:
        report = confirm_listed(engine, [answer], now=AFTER)
    assert len(report.mismatched) == 1
    result = reconcile_day(engine, PAST, now=AFTER)
    (row,) = [r for r in result.report["exceptions"] if r["ref"] in (rtr, f"{e2e}:r-stated")]
    assert row["status"] == "status_mismatch"
    assert row["reason"].startswith(reason), row["reason"]
    assert row["action"].startswith(action), row["action"]
    # The Pix's net is what the API stands behind: what it says the refund gave back.
    verdicts = verdicts_of(engine, result)
    assert verdicts[("movement", e2e)].net_cents == (5_000 if stated == "DEVOLVIDO" else 10_000)
    # And its charge reads refunded only as far as the API says money went back.
    charge = verdicts[("charge", f"cob:{txid}")].status
    assert charge == ("partially_refunded" if stated == "DEVOLVIDO" else "paid")


@pytest.mark.parametrize("natureza", ["ORIGINAL", "MED_OPERACIONAL"])
@pytest.mark.parametrize(
    ("notified", "stated"), [("NAO_REALIZADO", "DEVOLVIDO"), ("DEVOLVIDO", "NAO_REALIZADO")]
)
def test_the_bridge_counts_a_refund_the_api_contradicts_as_the_api_states_it(
    engine: Engine, notified: str, stated: str, natureza: str
) -> None:
    """The API column holds the refunds the API states made, whatever the notification
    said: one notified as not made that the API states made is money that left (and the
    statement's debit is explained), one notified as made that it denies is none. The
    webhook column keeps what was notified; the gap is the refund's own exception."""
    book = DayBook(engine, PAST)
    rtr = "D18236120202603101500bridge00001"
    refund = {
        "id": "r-bridge",
        "rtrId": rtr,
        "valor": reais(5_000),
        "natureza": natureza,
        "status": notified,
        "horario": {"solicitacao": book.at("15:00").isoformat()},
    }
    e2e = book.pix(10_000, "14:00", polled=False, refunds=[refund])
    book.confirm_all_pix()
    book.line("PIX_RECEIVED", 10_000, "14:00", credit=True, endToEndId=e2e)
    if stated == "DEVOLVIDO":
        book.line("PIX_REFUND_SENT", 5_000, "15:00", credit=False, endToEndId=rtr)
    answer = {
        "endToEndId": e2e,
        "valor": reais(10_000),
        "horario": book.at("14:00").isoformat(),
        "devolucoes": [{**refund, "status": stated}],
    }

    class Api:
        def get_pix(self, wanted: str) -> dict[str, Any]:
            return answer

    assert len(confirm_pending_refunds(engine, Api(), grace=timedelta(0)).mismatched) == 1
    result = reconcile_day(engine, PAST, now=AFTER)
    category = "refunds_sent" if natureza == "ORIGINAL" else "med_debits"
    row = _bridge(result)[category]
    made = 5_000 if stated == "DEVOLVIDO" else 0
    told = 5_000 if notified == "DEVOLVIDO" else 0
    assert (row["webhook_cents"], row["api_cents"], row["statement_cents"]) == (told, made, made)
    assert row["difference_cents"] == 0
    refs = {r["ref"]: r["status"] for r in result.report["exceptions"]}
    assert refs.get(rtr) == "status_mismatch"
    # Nothing left that no item explains: the refund's own exception says it all.
    assert not [ref for ref in refs if ref.startswith("bridge:")]
    assert result.report["bridge"]["residual_cents"] == 0


def test_a_refund_the_api_has_not_confirmed_is_pending_then_its_own_exception(
    engine: Engine,
) -> None:
    """A refund notified as made and booked, that the API has not stood behind: pending
    while inside its grace period (the day waits), then its own exception — not matched,
    with only the bridge left to say, in no words of the refund, that something differs."""
    book = DayBook(engine, PAST)
    rtr = "D18236120202603101500waiting0001"
    refund = {
        "id": "r-waiting",
        "rtrId": rtr,
        "valor": reais(4_000),
        "natureza": "ORIGINAL",
        "status": "DEVOLVIDO",
        "horario": {
            "solicitacao": book.at("15:00").isoformat(),
            "liquidacao": book.at("15:00").isoformat(),
        },
    }
    e2e = book.pix(10_000, "14:00", polled=False, refunds=[refund])
    book.confirm_all_pix()
    book.line("PIX_RECEIVED", 10_000, "14:00", credit=True, endToEndId=e2e)
    book.line("PIX_REFUND_SENT", 4_000, "15:00", credit=False, endToEndId=rtr)
    with session_scope(engine) as session:
        # Notified when it was made; no look-up answered since.
        session.execute(update(PixRefund).values(updated_at=book.at("15:00")))
    waiting = reconcile_day(engine, PAST, now=book.at("15:05"))
    assert verdicts_of(engine, waiting)[("movement", rtr)].status == "pending"
    assert waiting.verdict is DayVerdict.RECONCILED_WITH_PENDING, waiting.report["exceptions"]
    result = reconcile_day(engine, PAST, now=AFTER)
    assert result.verdict is DayVerdict.BREAKS
    (row,) = result.report["exceptions"]
    assert (row["ref"], row["status"]) == (rtr, "unconfirmed_webhook")
    assert "has not confirmed it within the grace period" in row["reason"]
    assert (row["expected_cents"], row["actual_cents"]) == (4_000, 4_000)
    assert row["action"].startswith("ask the provider about the refund of R$ 40,00")
    # Not counted as sent: the API column has none of it, and the refund says why.
    row_bridge = _bridge(result)["refunds_sent"]
    assert (row_bridge["api_cents"], row_bridge["statement_cents"]) == (0, 4_000)


def test_no_provider_configured_is_incomplete_never_reconciled(engine: Engine) -> None:
    book = DayBook(engine, PAST)
    book.pix(5_000, "09:00", polled=False)  # notified, never confirmed: no API to ask
    result = reconcile_day(engine, PAST, now=AFTER, sources=Sources(qrcode=False, accounts=False))
    assert result.verdict is DayVerdict.INCOMPLETE
    assert result.exit_code == 2
    reasons = " ".join(result.report["incomplete_because"])
    assert "no provider API is configured" in reasons
    assert "PIXRECON_CONFIRM_POLICY=none" in reasons
    trusting = reconcile_day(
        engine,
        PAST,
        now=AFTER,
        sources=Sources(qrcode=False, accounts=False, confirm_policy="none"),
    )
    # Trusting webhooks does not make a statement appear: still nothing to check against.
    assert trusting.verdict is DayVerdict.INCOMPLETE
    assert "PIXRECON_CONFIRM_POLICY" not in " ".join(trusting.report["incomplete_because"])


def test_a_day_is_not_made_incomplete_by_another_days_unconfirmable_pix(engine: Engine) -> None:
    """Accounts API only: a Pix of the day that no API can confirm leaves the day
    incomplete; one of another day, notified later, leaves its answer as it was."""
    accounts_only = Sources(qrcode=False)
    book = DayBook(engine, PAST)
    e2e = book.pix(5_000, "09:00")
    book.line("PIX_RECEIVED", 5_000, "09:00", credit=True, endToEndId=e2e)
    waiting = reconcile_day(engine, PAST, now=AFTER, sources=accounts_only)
    assert "1 Pix received wait for confirmation" in " ".join(waiting.report["incomplete_because"])
    book.confirm_all_pix()
    before = reconcile_day(engine, PAST, now=AFTER, sources=accounts_only)
    assert before.verdict is DayVerdict.RECONCILED, before.report
    book.next_day().pix(7_000, "10:00", polled=False)
    again = reconcile_day(engine, PAST, now=AFTER + timedelta(days=2), sources=accounts_only)
    assert again.verdict is DayVerdict.RECONCILED, again.report


def _comparable(result: NightlyResult) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(json.dumps(result.report))
    report.pop("run_id")
    return report


@pytest.mark.parametrize("weeks_later", [1, 6])
def test_a_past_day_gives_the_same_answer_whenever_it_is_asked(
    engine: Engine, weeks_later: int
) -> None:
    book = DayBook(engine, PAST)
    _clean_day(book)
    # Expire after the day's end: judged as of the day, they are still open.
    book.charge("cob", "cobexpirestomorrow000000000001", 2_500, "20:00", expiracao=86_400)
    book.charge(
        "cobv",
        "cobvduetomorrow0000000000001",
        4_000,
        "08:00",
        dataDeVencimento=PAST.isoformat(),
        validadeAposVencimento=1,
    )
    first = reconcile_day(engine, PAST, now=AFTER)
    later = reconcile_day(engine, PAST, now=AFTER + timedelta(weeks=weeks_later))
    assert _comparable(later) == _comparable(first)
    assert later.report["charges"] == {"unpaid": 2}


def test_a_charge_that_expires_at_the_days_last_instant_is_expired_on_it(engine: Engine) -> None:
    """Created at 23:00 to live an hour: at midnight it can no longer be paid, as the
    provider counts it, so the day says expired and so does any later run."""
    book = DayBook(engine, PAST)
    _clean_day(book)
    book.charge("cob", "cobexpiresatmidnight000000001", 2_500, "23:00", expiracao=3_600)
    book.charge("cob", "cobexpiresasecondlater0000001", 2_500, "23:00", expiracao=3_601)
    first = reconcile_day(engine, PAST, now=AFTER)
    assert first.report["charges"] == {"expired": 1, "unpaid": 1}
    assert (
        reconcile_day(engine, PAST, now=AFTER + timedelta(weeks=3)).report["charges"]
        == (first.report["charges"])
    )


@pytest.mark.parametrize("ended", ["REMOVIDA_PELO_USUARIO_RECEBEDOR", "REMOVIDA_PELO_PSP"])
def test_a_charge_removed_the_day_after_was_unpaid_at_its_days_end(
    engine: Engine, ended: str
) -> None:
    """Open and unpaid at midnight, removed the next morning: the BCB's charge says no time
    for its removal, so the day judges it by when the removal was first seen, and its
    charges read the same before and after — never "expired" for a charge open at its end."""
    book = DayBook(engine, PAST)
    _clean_day(book)
    txid = "cobremovedthedayafter00000001"
    raw = {
        "txid": txid,
        "calendario": {"criacao": book.at("09:00").isoformat(), "expiracao": 86_400 * 3},
        "valor": {"original": reais(2_500)},
    }
    book._store([charge_item("cob", {**raw, "status": "ATIVA"})], Source.POLL, START)
    first = reconcile_day(engine, PAST, now=AFTER)
    assert first.report["charges"] == {"unpaid": 1}
    removed = END + timedelta(hours=10)
    book._store([charge_item("cob", {**raw, "status": ended})], Source.POLL, removed)
    later = reconcile_day(engine, PAST, now=removed + timedelta(weeks=2))
    assert later.report["charges"] == {"unpaid": 1}
    assert _comparable(later) == _comparable(first)
    # Removed before midnight, it could no longer be paid at the day's end.
    same_day = "cobremovedthesameday000000001"
    book._store(
        [charge_item("cob", {**raw, "txid": same_day, "status": "ATIVA"})], Source.POLL, START
    )
    book._store(
        [charge_item("cob", {**raw, "txid": same_day, "status": ended})],
        Source.POLL,
        END - timedelta(hours=1),
    )
    verdicts = verdicts_of(engine, reconcile_day(engine, PAST, now=AFTER))
    assert verdicts[("charge", "cob:" + same_day)].status == "expired"
    assert verdicts[("charge", "cob:" + txid)].status == "unpaid"


def test_a_charge_not_seen_open_at_its_days_end_is_judged_as_it_stands(engine: Engine) -> None:
    """Nothing says when a charge first listed already removed was open, nor one whose
    states all came after its day (a day loaded later than it happened): each reads
    removed on its day, as it did before the removal had a time."""
    book = DayBook(engine, PAST)
    _clean_day(book)
    later = END + timedelta(days=3)
    raw = {
        "calendario": {"criacao": book.at("09:00").isoformat(), "expiracao": 86_400 * 3},
        "valor": {"original": reais(2_500)},
    }
    removed = "REMOVIDA_PELO_USUARIO_RECEBEDOR"
    first_seen_removed = {**raw, "txid": "cobfirstseenremoved0000000001", "status": removed}
    book._store([charge_item("cob", first_seen_removed)], Source.POLL, later)
    loaded = {**raw, "txid": "cobloadedafteritsday000000001"}
    book._store([charge_item("cob", {**loaded, "status": "ATIVA"})], Source.POLL, later)
    book._store(
        [charge_item("cob", {**loaded, "status": removed})], Source.POLL, later + timedelta(hours=1)
    )
    assert reconcile_day(engine, PAST, now=AFTER).report["charges"] == {"expired": 2}


def _weekend_cobvs(book: DayBook, suffix: str) -> tuple[str, str]:
    """Two due-date charges of R$ 40,00 whose last day would be Saturday 2026-03-07 but for
    the BCB moving it to the Monday: one due that Saturday with no days after, one due the
    Wednesday before with three."""
    due_saturday, third_day_saturday = (
        f"cobvduesaturday{suffix:0>13}",
        f"cobvthreedays{suffix:0>15}",
    )
    for txid, due, validity in (
        (due_saturday, "2026-03-07", 0),
        (third_day_saturday, "2026-03-04", 3),
    ):
        book.charge(
            "cobv", txid, 4_000, "08:00", dataDeVencimento=due, validadeAposVencimento=validity
        )
    return due_saturday, third_day_saturday


def test_a_due_date_charge_whose_last_day_falls_on_a_weekend_is_payable_on_monday(
    engine: Engine,
) -> None:
    saturday = DayBook(engine, date(2026, 3, 7))
    _clean_day(saturday)
    paid_on_monday = _weekend_cobvs(saturday, "1")
    judged = reconcile_day(engine, saturday.day, now=business_day_bounds(saturday.day)[1])
    assert judged.report["charges"] == {"unpaid": 2}
    # Created on Sunday, so that day judges them too (a charge belongs to the day it was
    # created, falls due or was paid).
    sunday = saturday.next_day()
    _clean_day(sunday)
    _weekend_cobvs(sunday, "2")
    judged = reconcile_day(engine, sunday.day, now=business_day_bounds(sunday.day)[1])
    assert judged.report["charges"] == {"unpaid": 2}
    monday = sunday.next_day()
    _clean_day(monday)
    for txid in paid_on_monday:
        e2e = monday.pix(4_000, "12:00", txid=txid, webhook=False)
        monday.line("PIX_RECEIVED", 4_000, "12:00", credit=True, endToEndId=e2e)
    # Monday is the last day: one nobody paid by its end can no longer be paid.
    unpaid = _weekend_cobvs(monday, "3")
    end = business_day_bounds(monday.day)[1]
    result = reconcile_day(engine, monday.day, now=end + timedelta(hours=2))
    verdicts = verdicts_of(engine, result)
    assert {txid: verdicts[("charge", "cobv:" + txid)].status for txid in paid_on_monday} == {
        txid: "paid" for txid in paid_on_monday
    }
    assert {verdicts[("charge", "cobv:" + txid)].status for txid in unpaid} == {"expired"}
    assert result.verdict is DayVerdict.RECONCILED, result.report


def test_a_due_date_charge_paid_late_with_its_fine_and_interest_is_paid(engine: Engine) -> None:
    book = DayBook(engine, PAST)
    _clean_day(book)
    terms, due = LATE_TERMS, LATE_DUE
    for txid, paid in (
        ("cobvlatewithfine000000000001", 10_700),
        ("cobvlateoriginal00000000001", 10_000),
    ):
        book.charge(
            "cobv", txid, 10_000, "08:00", terms, dataDeVencimento=due, validadeAposVencimento=30
        )
        e2e = book.pix(paid, "12:00", txid=txid, webhook=False)
        book.line("PIX_RECEIVED", paid, "12:00", credit=True, endToEndId=e2e)
    result = reconcile_day(engine, PAST, now=AFTER)
    verdicts = verdicts_of(engine, result)
    assert verdicts[("charge", "cobv:cobvlatewithfine000000000001")].status == "paid"
    short = verdicts[("charge", "cobv:cobvlateoriginal00000000001")]
    assert (short.status, short.expected_cents, short.actual_cents) == ("underpaid", 10_700, 10_000)


def _late_terms_cobv(book: DayBook, txid: str, due: date) -> None:
    """A due-date charge of R$ 100,00 with a 2 % fine and 1 % interest a day once late."""
    book.charge(
        "cobv",
        txid,
        10_000,
        "08:00",
        LATE_TERMS,
        dataDeVencimento=due.isoformat(),
        validadeAposVencimento=30,
    )


def test_a_due_date_charge_unpaid_on_its_day_keeps_the_amount_it_owed_then(
    engine: Engine,
) -> None:
    """Paid three days after its due date with its fine and interest: the due date, asked
    again, still says it was unpaid for its original amount."""
    book = DayBook(engine, PAST)
    _clean_day(book)
    txid = "cobvpaidthreedayslater000001"
    _late_terms_cobv(book, txid, PAST)
    first = reconcile_day(engine, PAST, now=AFTER)
    unpaid = verdicts_of(engine, first)[("charge", f"cobv:{txid}")]
    assert (unpaid.status, unpaid.expected_cents) == ("unpaid", 10_000)

    later = DayBook(engine, PAST + timedelta(days=3), book.balance)
    e2e = later.pix(10_500, "12:00", txid=txid, webhook=False)
    later.line("PIX_RECEIVED", 10_500, "12:00", credit=True, endToEndId=e2e)
    paid = reconcile_day(
        engine, later.day, now=business_day_bounds(later.day)[1] + timedelta(hours=2)
    )
    late = verdicts_of(engine, paid)[("charge", f"cobv:{txid}")]
    # A 2 % fine and 1 % interest a day for three days: R$ 105,00 due, paid exactly.
    assert (late.status, late.expected_cents) == ("paid", 10_500)

    again = reconcile_day(engine, PAST, now=business_day_bounds(later.day)[1])
    still = verdicts_of(engine, again)[("charge", f"cobv:{txid}")]
    assert (still.status, still.expected_cents) == ("unpaid", 10_000)


def test_a_due_date_charge_paid_again_later_leaves_its_paid_day_alone(engine: Engine) -> None:
    """Paid exactly before its due date; ten days later a second Pix pays it again, its
    breakdown carrying that day's fine and interest: the first day stays reconciled."""
    book = DayBook(engine, PAST)
    _clean_day(book)
    txid = "cobvpaidontimethenagain00001"
    _late_terms_cobv(book, txid, PAST + timedelta(days=5))
    e2e = book.pix(
        10_000, "12:00", txid=txid, webhook=False, components={"original": {"valor": "100.00"}}
    )
    book.line("PIX_RECEIVED", 10_000, "12:00", credit=True, endToEndId=e2e)
    first = reconcile_day(engine, PAST, now=AFTER)
    assert first.verdict is DayVerdict.RECONCILED, first.report

    later = DayBook(engine, PAST + timedelta(days=10), book.balance)
    components = {"original": {"valor": "100.00"}, "multa": {"valor": "2.00"}}
    again_paid = later.pix(10_200, "09:00", txid=txid, webhook=False, components=components)
    later.line("PIX_RECEIVED", 10_200, "09:00", credit=True, endToEndId=again_paid)
    reconcile_day(engine, later.day, now=business_day_bounds(later.day)[1] + timedelta(hours=2))

    again = reconcile_day(engine, PAST, now=business_day_bounds(later.day)[1] + timedelta(hours=3))
    assert again.verdict is DayVerdict.RECONCILED, again.report["exceptions"]
    paid = verdicts_of(engine, again)[("charge", f"cobv:{txid}")]
    assert (paid.status, paid.exception) == ("paid", False)


@pytest.mark.parametrize("closing", ["block released", "bare"])
def test_a_med_case_closed_later_keeps_its_day_end_figures(engine: Engine, closing: str) -> None:
    """Open on the day with R$ 20,00 blocked and a stated deadline; closed two days later
    by a notification saying the block is released (0), or only the id and status."""
    book = DayBook(engine, PAST)
    _clean_day(book)
    opened_at = book.at("10:00").isoformat()
    book.infraction(
        {
            "id": "med-closed-later",
            "status": "OPEN",
            "amount": "50.00",
            "blockedAmount": "20.00",
            "createdAt": opened_at,
            "analysisDeadline": book.at("12:00", PAST + timedelta(days=5)).isoformat(),
        }
    )
    first = reconcile_day(engine, PAST, now=AFTER)
    later = DayBook(engine, PAST + timedelta(days=2), book.balance)
    closed: dict[str, Any] = {
        "id": "med-closed-later",
        "status": "CLOSED",
        "createdAt": opened_at,
        "closedAt": later.at("09:00").isoformat(),
    }
    if closing == "block released":
        closed.update({"amount": "50.00", "blockedAmount": "0", "debitedAmount": "50.00"})
    later.infraction(closed)
    later.line("INFRACTION_DEBIT", 5_000, "09:00", credit=False, infractionId="med-closed-later")
    reconcile_day(engine, later.day, now=business_day_bounds(later.day)[1] + timedelta(hours=2))

    again = reconcile_day(engine, PAST, now=business_day_bounds(later.day)[1] + timedelta(hours=3))
    assert again.report["med"] == first.report["med"]
    assert again.report["med"]["blocked_cents"] == 2_000
    assert [e["action"] for e in again.report["exceptions"]] == [
        e["action"] for e in first.report["exceptions"]
    ]


class _Infractions:
    """The accounts API's infraction look-up: it names the Pix each case disputes."""

    def __init__(self, disputed: dict[str, str]) -> None:
        self.disputed = disputed

    def get_infraction(self, infraction_id: str) -> dict[str, Any]:
        if infraction_id not in self.disputed:
            raise NotFound(infraction_id)
        return {"id": infraction_id, "endToEndId": self.disputed[infraction_id]}


def test_a_med_debit_without_its_case_id_is_matched_by_the_disputed_pix(engine: Engine) -> None:
    from reconcile.polling.accounts import identify_disputed_pix

    book = DayBook(engine, PAST)
    _clean_day(book)
    disputed = book.pix(8_000, "11:30", webhook=False)
    book.line("PIX_RECEIVED", 8_000, "11:30", credit=True, endToEndId=disputed)
    for case_id, status, debited in (("med-closed", "CLOSED", "80.00"), ("med-open", "OPEN", "0")):
        book.infraction(
            {
                "id": case_id,
                "status": status,
                "amount": "80.00",
                "debitedAmount": debited,
                "createdAt": book.at("10:00").isoformat(),
                "closedAt": book.at("16:00").isoformat() if status == "CLOSED" else None,
            }
        )
    book.confirm_all_infractions()
    api: Any = _Infractions({"med-closed": disputed})
    found = identify_disputed_pix(api, engine)
    assert (found.seen, found.invalid) == (1, 0)
    # The provider's debit names the Pix, not the case.
    entry = book.line("INFRACTION_DEBIT", 8_000, "16:00", credit=False, endToEndId=disputed)
    result = reconcile_day(engine, PAST, now=AFTER)
    verdicts = verdicts_of(engine, result)
    assert verdicts[("infraction", "med-closed")].status == "closed"
    assert ("statement", entry) not in verdicts
    med = _bridge(result)["med_debits"]
    assert med["api_cents"] == med["statement_cents"] == 8_000
    assert result.report["bridge"]["residual_cents"] == 0
    med_report = result.report["med"]
    assert (med_report["open_cases"], med_report["at_risk_cents"]) == (1, 8_000)
    assert med_report["debited_cents"] == 8_000
    by_case = {case["case_id"]: case for case in med_report["cases"]}
    assert by_case["med-open"]["state"] == "open"
    # The provider stated no deadline: the MED's seven days of analysis from the opening.
    deadline = datetime.fromisoformat(by_case["med-open"]["deadline_at"])
    assert deadline == book.at("10:00") + timedelta(days=7)
    assert by_case["med-closed"]["state"] == "closed"
    assert by_case["med-closed"]["debited_cents"] == 8_000
    assert verdicts[("infraction", "med-open")].status == "open_case"
    # What to do says by when: the deadline in São Paulo time.
    (open_case,) = [e for e in result.report["exceptions"] if e["ref"] == "med-open"]
    assert open_case["action"] == (
        f"answer the MED case by {deadline.astimezone(BUSINESS_TZ):%d/%m/%Y %H:%M}: "
        "R$ 80,00 may be debited"
    )


def test_an_open_med_case_comes_first_as_its_deadline_nears(engine: Engine) -> None:
    """The run ranks as of its day; the list people work from ranks again as of today,
    while the case is still open at the provider."""
    book = DayBook(engine, PAST)
    _clean_day(book)
    for case_id, days in (("med-soon", 2), ("med-later", 6)):
        book.infraction(
            {
                "id": case_id,
                "status": "OPEN",
                "amount": "80.00",
                "createdAt": book.at("10:00").isoformat(),
                "analysisDeadline": book.at("18:00", PAST + timedelta(days=days)).isoformat(),
            }
        )
    book.confirm_all_infractions()
    result = reconcile_day(engine, PAST, now=AFTER)
    verdicts = verdicts_of(engine, result)
    priorities = {ref: verdicts[("infraction", ref)].priority for ref in ("med-soon", "med-later")}
    assert priorities == {"med-soon": 1, "med-later": 2}
    # Re-run after the later deadline has come near: the day's answer is the day's.
    again = reconcile_day(engine, PAST, now=AFTER + timedelta(days=5))
    assert verdicts_of(engine, again)[("infraction", "med-later")].priority == 2

    def listed(today: date) -> dict[str, int]:
        with session_scope(engine) as session:
            rows = case_rows(session, day=PAST, as_of=today, by_priority=True)
        return {row["ref"]: row["priority"] for row in rows if row["subject"] == "infraction"}

    assert listed(PAST + timedelta(days=3)) == {"med-soon": 1, "med-later": 2}
    assert listed(PAST + timedelta(days=4)) == {"med-soon": 1, "med-later": 1}


def _rejected_attempt(day: date) -> dict[str, Any]:
    return {
        "status": "REJEITADA",
        "dataLiquidacao": day.isoformat(),
        "rejeicao": {"codigo": "AM04"},
    }


def test_a_rejected_pix_automatico_debit_is_an_exception_unless_retries_remain(
    engine: Engine,
) -> None:
    book = DayBook(engine, PAST)
    _clean_day(book)
    due = PAST.isoformat()
    # No retries allowed: the charge is closed as rejected.
    book.charge(
        "cobr",
        "cobrnoretry00000000000000001",
        3_000,
        "06:00",
        status="REJEITADA",
        extra={
            "politicaRetentativa": "NAO_PERMITE",
            "tentativas": [_rejected_attempt(PAST)],
            "encerramento": {"rejeicao": {"codigo": "AM04"}},
        },
        dataDeVencimento=due,
    )
    # Three retries allowed within seven days: still collectable.
    book.charge(
        "cobr",
        "cobrretries00000000000000001",
        4_000,
        "06:00",
        extra={"politicaRetentativa": "PERMITE_3R_7D", "tentativas": [_rejected_attempt(PAST)]},
        dataDeVencimento=due,
    )
    result = reconcile_day(engine, PAST, now=AFTER)
    verdicts = verdicts_of(engine, result)
    closed = verdicts[("charge", "cobr:cobrnoretry00000000000000001")]
    assert (closed.status, closed.exception) == ("unpaid", True)
    assert "AM04" in closed.reason
    retrying = verdicts[("charge", "cobr:cobrretries00000000000000001")]
    assert (retrying.status, retrying.exception) == ("pending", False)
    assert "3 more attempt(s) until 17/03/2026" in retrying.reason
    pending = {item["ref"]: item for item in result.report["pending"]}
    window_closes = datetime.fromisoformat(pending["cobr:cobrretries00000000000000001"]["due_at"])
    assert window_closes == business_day_bounds(PAST + timedelta(days=7))[1]
    assert result.verdict is DayVerdict.BREAKS


def test_a_pix_automatico_charge_closed_by_later_attempts_was_still_retrying_on_its_day(
    engine: Engine,
) -> None:
    book = DayBook(engine, PAST)
    _clean_day(book)
    txid, due = "cobrretriedlater000000000001", PAST.isoformat()

    def polled(status: str, *days: date) -> None:
        book.charge(
            "cobr",
            txid,
            4_000,
            "06:00",
            status=status,
            extra={
                "politicaRetentativa": "PERMITE_3R_7D",
                "tentativas": [_rejected_attempt(day) for day in days],
            },
            dataDeVencimento=due,
        )

    polled("ATIVA", PAST)
    first = reconcile_day(engine, PAST, now=AFTER)
    retrying = verdicts_of(engine, first)[("charge", f"cobr:{txid}")]
    assert (retrying.status, retrying.exception) == ("pending", False)
    # Three more attempts on the next three days, each rejected: the charge is closed.
    polled("REJEITADA", *(PAST + timedelta(days=n) for n in range(4)))
    again = reconcile_day(engine, PAST, now=AFTER + timedelta(days=10))
    still = verdicts_of(engine, again)[("charge", f"cobr:{txid}")]
    assert (still.status, still.exception, still.reason) == ("pending", False, retrying.reason)
    assert "3 more attempt(s) until 17/03/2026" in still.reason
    assert again.verdict == first.verdict


def test_a_pix_whose_own_breakdown_disagrees_with_the_terms_is_raised(engine: Engine) -> None:
    book = DayBook(engine, PAST)
    _clean_day(book)
    terms, due = LATE_TERMS, LATE_DUE
    breakdowns = {
        "cobvbreakdownagrees000000001": {"juros": {"valor": "5.00"}},
        "cobvbreakdowndiffers00000001": {"juros": {"valor": "4.00"}},
    }
    for txid, interest in breakdowns.items():
        book.charge(
            "cobv", txid, 10_000, "08:00", terms, dataDeVencimento=due, validadeAposVencimento=30
        )
        components = {"original": {"valor": "100.00"}, "multa": {"valor": "2.00"}, **interest}
        e2e = book.pix(10_700, "12:00", txid=txid, webhook=False, components=components)
        book.line("PIX_RECEIVED", 10_700, "12:00", credit=True, endToEndId=e2e)
    result = reconcile_day(engine, PAST, now=AFTER)
    verdicts = verdicts_of(engine, result)
    agrees = verdicts[("charge", "cobv:cobvbreakdownagrees000000001")]
    assert (agrees.status, agrees.exception) == ("paid", False)
    differs = verdicts[("charge", "cobv:cobvbreakdowndiffers00000001")]
    assert (differs.status, differs.exception) == ("paid", True)
    assert (
        "the Pix itemised R$ 106,00 as due (its componentesValor), the charge's terms give "
        "R$ 107,00" in differs.reason
    )
    with session_scope(engine) as session:
        (case,) = [c for c in case_rows(session, day=PAST) if c["ref"].endswith("differs00000001")]
    assert case["action"] == (
        "ask the provider which amount was due on the charge of R$ 107,00 (the Pix itemised "
        "another), before asking the payer for more or giving any back"
    )


def test_a_cycle_with_no_recurring_charge_is_a_missed_cycle(engine: Engine) -> None:
    book = DayBook(engine, PAST)
    _clean_day(book)
    # Weekly since a week ago: a cycle falls on the day, and no charge was created for it.
    book.recurrence("RN1234567820260303missed00001", PAST - timedelta(days=7), "SEMANAL", 2_990)
    # Monthly since a month ago, with its charge due on the day: nothing missed.
    charged = "RN1234567820260210charged0001"
    book.recurrence(charged, date(2026, 2, 10), "MENSAL", 4_900)
    book.charge(
        "cobr",
        "cobrcharged000000000000000001",
        4_900,
        "06:00",
        extra={"idRec": charged, "politicaRetentativa": "NAO_PERMITE"},
        dataDeVencimento=PAST.isoformat(),
    )
    # Monthly, with its charge due two days into the cycle: the charge is this cycle's.
    due_later = "RN1234567820260210duelater001"
    book.recurrence(due_later, date(2026, 2, 10), "MENSAL", 3_500)
    book.charge(
        "cobr",
        "cobrduelater0000000000000001",
        3_500,
        "06:00",
        extra={"idRec": due_later, "politicaRetentativa": "NAO_PERMITE"},
        dataDeVencimento=(PAST + timedelta(days=2)).isoformat(),
    )
    # Weekly, with its only charge due on the next cycle's date: that cycle's, not this one's.
    next_cycle = "RN1234567820260303nextcycle01"
    book.recurrence(next_cycle, PAST - timedelta(days=7), "SEMANAL", 1_500)
    book.charge(
        "cobr",
        "cobrnextcycle000000000000001",
        1_500,
        "06:00",
        extra={"idRec": next_cycle, "politicaRetentativa": "NAO_PERMITE"},
        dataDeVencimento=(PAST + timedelta(days=7)).isoformat(),
    )
    # Monthly, but its next cycle is the next day.
    book.recurrence("RN1234567820260211nextday0001", date(2026, 2, 11), "MENSAL", 1_000)
    result = reconcile_day(engine, PAST, now=AFTER)
    verdicts = verdicts_of(engine, result)
    missed = {v.ref: v for v in verdicts.values() if v.status == "missed_cycle"}
    assert {(v.subject, ref) for ref, v in missed.items()} == {
        ("recurrence", f"rec:RN1234567820260303missed00001:{PAST.isoformat()}"),
        ("recurrence", f"rec:{next_cycle}:{PAST.isoformat()}"),
    }
    first = missed[f"rec:RN1234567820260303missed00001:{PAST.isoformat()}"]
    assert (first.exception, first.expected_cents) == (True, 2_990)
    assert "10/03/2026" in first.reason
    assert result.verdict is DayVerdict.BREAKS
    # Each cycle is raised by its own day only.
    later = reconcile_day(engine, PAST + timedelta(days=1), now=AFTER + timedelta(days=1))
    assert [v.ref for v in verdicts_of(engine, later).values() if v.status == "missed_cycle"] == [
        "rec:RN1234567820260211nextday0001:2026-03-11"
    ]


@pytest.mark.parametrize("afterwards", ["cancelled", "charged late"])
def test_a_missed_cycle_stays_missed_whatever_happens_after_its_day(
    engine: Engine, afterwards: str
) -> None:
    book = DayBook(engine, PAST)
    _clean_day(book)
    rec = "RN1234567820260303missed00001"
    book.recurrence(rec, PAST - timedelta(days=7), "SEMANAL", 2_990)
    first = reconcile_day(engine, PAST, now=AFTER)
    missed = f"rec:{rec}:{PAST.isoformat()}"
    assert verdicts_of(engine, first)[("recurrence", missed)].status == "missed_cycle"

    later = DayBook(engine, PAST + timedelta(days=2), book.balance)
    if afterwards == "cancelled":
        raw = {
            "idRec": rec,
            "status": "CANCELADA",
            "calendario": {
                "dataInicial": (PAST - timedelta(days=7)).isoformat(),
                "periodicidade": "SEMANAL",
            },
            "atualizacao": [
                {"status": "APROVADA", "data": book.at("06:00").isoformat()},
                {"status": "CANCELADA", "data": later.at("10:00").isoformat()},
            ],
        }
        with session_scope(engine) as session:
            new = store_items(session, rec_callback_items(raw), source=Source.POLL).new_ids
        process_items(engine, new)
    else:
        # A charge for the cycle, created two days after it, due the next day.
        later.charge(
            "cobr",
            "cobrcreatedlate0000000000001",
            2_990,
            "09:00",
            extra={"idRec": rec, "politicaRetentativa": "NAO_PERMITE"},
            dataDeVencimento=(PAST + timedelta(days=3)).isoformat(),
        )
    again = reconcile_day(engine, PAST, now=AFTER + timedelta(days=3))
    assert again.verdict == first.verdict == DayVerdict.BREAKS
    assert verdicts_of(engine, again)[("recurrence", missed)].status == "missed_cycle"


@given(
    start=st.dates(date(2020, 1, 1), date(2030, 12, 31)),
    later=st.integers(0, 2_000),
    periodicity=st.sampled_from(["SEMANAL", "MENSAL", "TRIMESTRAL", "SEMESTRAL", "ANUAL"]),
)
def test_the_cycle_of_a_day_is_the_last_one_on_or_before_it(
    start: date, later: int, periodicity: str
) -> None:
    day = start + timedelta(days=later)
    found = cycle_on_or_before(start, periodicity, day)
    assert found is not None
    cycle, following = found
    assert start <= cycle <= day < following
    # A cycle falls on the start's day of the month, or the month's last day if shorter.
    if periodicity != "SEMANAL":
        assert cycle.day == start.day or cycle.month != (cycle + timedelta(days=1)).month
    else:
        assert (cycle - start).days % 7 == 0
        assert (following - cycle).days == 7


def _closed_med_cases(
    book: DayBook, cases: Sequence[tuple[str, int]], *, webhook: bool = True
) -> None:
    for case_id, cents in cases:
        book.infraction(
            {
                "id": case_id,
                "status": "CLOSED",
                "amount": reais(cents),
                "debitedAmount": reais(cents),
                "blockedAmount": reais(cents),
                "createdAt": book.at("09:00").isoformat(),
                "closedAt": book.at("15:00").isoformat(),
            },
            webhook=webhook,
        )


def test_bare_med_debits_of_one_amount_go_to_as_many_cases_of_that_amount(
    engine: Engine,
) -> None:
    """Two cases of R$ 30,00, and two debits of R$ 30,00 naming neither case nor Pix: each
    case was debited, whichever line is whose."""
    book = DayBook(engine, PAST)
    _clean_day(book)
    # As polling found them: the API stands behind them.
    _closed_med_cases(book, [("med-x", 3_000), ("med-y", 3_000)], webhook=False)
    lines = [book.line("INFRACTION_DEBIT", 3_000, "15:05", credit=False) for _ in range(2)]
    result = reconcile_day(engine, PAST, now=AFTER)
    verdicts = verdicts_of(engine, result)
    assert [verdicts[("infraction", c)].status for c in ("med-x", "med-y")] == ["closed"] * 2
    assert verdicts[("infraction", "med-x")].source == "poll"
    assert not [line for line in lines if ("statement", line) in verdicts]
    bridge = result.report["bridge"]
    assert bridge["residual_cents"] == 0
    assert bridge["unexplained_cents"] == 0
    assert [e["ref"] for e in result.report["exceptions"]] == []


def test_a_bare_med_debit_is_matched_by_its_amount_only_when_one_case_fits(
    engine: Engine,
) -> None:
    book = DayBook(engine, PAST)
    _clean_day(book)
    # Three cases of R$ 30,00 and two lines: which one went undebited nobody can say.
    for case_id, cents in (("med-a", 7_000), *((f"med-{c}", 3_000) for c in "bcd")):
        book.infraction(
            {
                "id": case_id,
                "status": "CLOSED",
                "amount": reais(cents),
                "debitedAmount": reais(cents),
                "blockedAmount": reais(cents),
                "createdAt": book.at("09:00").isoformat(),
                "closedAt": book.at("15:00").isoformat(),
            }
        )
    book.infraction(
        {
            "id": "med-open",
            "status": "OPEN",
            "amount": "50.00",
            "blockedAmount": "20.00",
            "createdAt": book.at("12:00").isoformat(),
            "analysisDeadline": book.at("12:00", PAST + timedelta(days=5)).isoformat(),
        }
    )
    book.confirm_all_infractions()
    # Lines naming neither the case nor the Pix: one amount fits one case, the other two.
    bare = book.line("INFRACTION_DEBIT", 7_000, "15:00", credit=False)
    twins = [book.line("INFRACTION_DEBIT", 3_000, "15:05", credit=False) for _ in range(2)]
    result = reconcile_day(engine, PAST, now=AFTER)
    verdicts = verdicts_of(engine, result)
    assert (verdicts[("infraction", "med-a")].status, verdicts[("infraction", "med-a")].source) == (
        "closed",
        "webhook",
    )
    assert ("statement", bare) not in verdicts
    for twin in twins:
        assert verdicts[("statement", twin)].exception
    assert verdicts[("infraction", "med-b")].status == "debit_never_came"
    med = result.report["med"]
    assert (med["open_cases"], med["at_risk_cents"], med["blocked_cents"]) == (1, 5_000, 2_000)
    opened = {case["case_id"]: case for case in med["cases"]}["med-open"]
    assert datetime.fromisoformat(opened["deadline_at"]) == book.at(
        "12:00", PAST + timedelta(days=5)
    )
    assert result.verdict is DayVerdict.BREAKS


class _ClosedSince:
    """The accounts API: the case closed the next day, with the debit it announced."""

    def __init__(self, case: dict[str, Any]) -> None:
        self.case = case
        self.asked: list[str] = []

    def get_infraction(self, infraction_id: str) -> dict[str, Any]:
        self.asked.append(infraction_id)
        if infraction_id != self.case["id"]:
            raise NotFound(infraction_id)
        return self.case


def test_a_case_left_open_is_asked_for_again_and_its_later_debit_found(engine: Engine) -> None:
    """No notification of its closing came: polling asks for every case still open here,
    the day it opened keeps saying open, the day it closed debits it."""
    from reconcile.polling.accounts import refresh_open_infractions

    book = DayBook(engine, PAST)
    _clean_day(book)
    opened = {"id": "med-later", "status": "OPEN", "amount": "80.00"}
    book.infraction({**opened, "createdAt": book.at("10:00").isoformat()}, webhook=False)
    first = reconcile_day(engine, PAST, now=AFTER)
    assert first.report["med"]["open_cases"] == 1

    later = PAST + timedelta(days=1)
    next_day = DayBook(engine, later)
    closed = {
        **opened,
        "status": "CLOSED",
        "debitedAmount": "80.00",
        "createdAt": book.at("10:00").isoformat(),
        "closedAt": next_day.at("09:00").isoformat(),
    }
    api: Any = _ClosedSince(closed)
    refreshed = refresh_open_infractions(api, engine, lambda ids: process_items(engine, ids))
    assert (api.asked, len(refreshed.new_ids)) == (["med-later"], 1)
    next_day.line("INFRACTION_DEBIT", 8_000, "09:00", credit=False, infractionId="med-later")
    second = reconcile_day(engine, later, now=business_day_bounds(later)[1] + timedelta(hours=2))
    assert second.report["med"]["debited_cents"] == 8_000
    assert verdicts_of(engine, second)[("infraction", "med-later")].status == "closed"
    again = reconcile_day(engine, PAST, now=AFTER + timedelta(days=2))
    assert again.report["med"] == first.report["med"]
    # Closed here now: nothing more to ask.
    assert refresh_open_infractions(api, engine).seen == 0


def test_a_case_the_provider_does_not_know_puts_nothing_at_risk(engine: Engine) -> None:
    """A forged MED notification: once the API answers it knows no such case, no money of
    it is at risk, and its day names it a possible forgery rather than an open case."""
    from reconcile.polling.accounts import refresh_open_infractions

    book = DayBook(engine, PAST)
    _clean_day(book)
    forged = {"id": "med-forged", "status": "CLOSED", "amount": "300.00"}
    book.infraction({**forged, "createdAt": book.at("10:00").isoformat()})
    first = reconcile_day(engine, PAST, now=AFTER)
    assert first.report["med"]["at_risk_cents"] == 30_000
    api: Any = _ClosedSince({"id": "someone-else"})
    refresh_open_infractions(api, engine)
    assert api.asked == ["med-forged"]

    again = reconcile_day(engine, PAST, now=AFTER + timedelta(days=1))
    assert again.report["med"]["at_risk_cents"] == 0
    assert again.report["med"]["open_cases"] == 0
    verdict = verdicts_of(engine, again)[("infraction", "med-forged")]
    assert (verdict.status, verdict.exception) == ("unconfirmed_webhook", True)
    assert again.verdict is DayVerdict.BREAKS
    with session_scope(engine) as session:
        (case,) = [c for c in case_rows(session, day=PAST) if c["ref"] == "med-forged"]
    assert case["action"].startswith("ask the provider about the MED case notified for R$ 300,00")


class _PixNow:
    """``GET /pix/{e2eid}``: the Pix with its refund settled since."""

    def __init__(self, pix: dict[str, Any]) -> None:
        self.pix = pix
        self.asked: list[str] = []

    def get_pix(self, end_to_end_id: str) -> dict[str, Any]:
        self.asked.append(end_to_end_id)
        if end_to_end_id != self.pix["endToEndId"]:
            raise NotFound(end_to_end_id)
        return self.pix


def test_a_refund_left_in_progress_is_asked_for_again_and_judged_the_day_it_settled(
    engine: Engine,
) -> None:
    """No notification of its settling came, and ``GET /pix`` lists the Pix on its own
    day: polling asks for every Pix whose refund is still in progress here."""
    from reconcile.polling.qrcode import refresh_refunds_in_progress

    book = DayBook(engine, PAST)
    _clean_day(book)
    rtr = "D99999008202603110300refundlate1"
    refund = {"id": "dev-later", "rtrId": rtr, "valor": "40.00"}
    asked = {
        **refund,
        "status": "EM_PROCESSAMENTO",
        "horario": {"solicitacao": book.at("23:00").isoformat()},
    }
    e2e = book.pix(10_000, "12:00", refunds=[asked])
    book.confirm_all_pix()
    book.line("PIX_RECEIVED", 10_000, "12:00", credit=True, endToEndId=e2e)
    first = reconcile_day(engine, PAST, now=AFTER)
    assert verdicts_of(engine, first)[("movement", rtr)].status == "pending"

    later = PAST + timedelta(days=1)
    next_day = DayBook(engine, later)
    next_day.balance = book.balance
    settled = {
        **refund,
        "status": "DEVOLVIDO",
        "horario": {
            "solicitacao": book.at("23:00").isoformat(),
            "liquidacao": next_day.at("00:30").isoformat(),
        },
    }
    pix_now = {
        "endToEndId": e2e,
        "valor": "100.00",
        "horario": book.at("12:00").isoformat(),
        "devolucoes": [settled],
    }
    api: Any = _PixNow(pix_now)
    refresh_refunds_in_progress(api, engine, lambda ids: process_items(engine, ids))
    assert api.asked == [e2e]
    next_day.line("PIX_REFUND_SENT", 4_000, "00:30", credit=False, endToEndId=rtr)
    second = reconcile_day(engine, later, now=business_day_bounds(later)[1] + timedelta(hours=2))
    judged = verdicts_of(engine, second)[("movement", rtr)]
    # Booked and stood behind: no exception, only the fact that polling found its end.
    assert (judged.status, judged.exception) == ("missing_webhook", False)
    assert judged.reason == "a refund found by polling only: no webhook came"
    assert second.report["totals"]["refunds"]["api"] == 4_000
    # Settled here now: nothing more to ask.
    assert refresh_refunds_in_progress(api, engine).seen == 0
    # Its own day, asked again, still had it in progress at its end.
    again = reconcile_day(engine, PAST, now=business_day_bounds(later)[1] + timedelta(hours=2))
    assert again.verdict == first.verdict == DayVerdict.RECONCILED_WITH_PENDING
    still = verdicts_of(engine, again)[("movement", rtr)]
    assert (still.status, still.reason) == ("pending", "refund still being processed")
    assert again.report["totals"]["refunds"] == first.report["totals"]["refunds"]


def test_a_refund_nobody_notified_of_an_earlier_days_pix_is_found_by_the_pix_its_line_names(
    engine: Engine,
) -> None:
    """``GET /pix`` lists a Pix on the day it was received: a refund of it settled on a
    later day, never notified, is found through the Pix its statement line names, the
    first time that later day is judged, not only once the earlier day is polled again."""
    from reconcile.polling.qrcode import ask_refunded_pix_of_statement

    book = DayBook(engine, PAST)
    _clean_day(book)
    e2e = book.pix(8_000, "12:00")
    book.confirm_all_pix()
    book.line("PIX_RECEIVED", 8_000, "12:00", credit=True, endToEndId=e2e)
    later = PAST + timedelta(days=1)
    next_day = DayBook(engine, later)
    next_day.balance = book.balance
    rtr = "D99999008202603110900unnotified1"
    settled = {
        "id": "dev-unnotified",
        "rtrId": rtr,
        "valor": "80.00",
        "status": "DEVOLVIDO",
        "horario": {
            "solicitacao": next_day.at("09:00").isoformat(),
            "liquidacao": next_day.at("09:00").isoformat(),
        },
    }
    next_day.line(
        "PIX_REFUND_SENT", 8_000, "09:00", credit=False, endToEndId=rtr, originalEndToEndId=e2e
    )
    start, end = business_day_bounds(later)
    api: Any = _PixNow(
        {
            "endToEndId": e2e,
            "valor": "80.00",
            "horario": book.at("12:00").isoformat(),
            "devolucoes": [settled],
        }
    )
    found = ask_refunded_pix_of_statement(
        api, engine, start, end, lambda ids: process_items(engine, ids)
    )
    assert api.asked == [e2e]
    assert found.seen == 1
    judged_day = reconcile_day(engine, later, now=end + timedelta(hours=2))
    judged = verdicts_of(engine, judged_day)[("movement", rtr)]
    assert (judged.status, judged.exception) == ("missing_webhook", False)
    assert judged.reason == "a refund found by polling only: no webhook came"
    assert judged_day.report["totals"]["refunds"]["api"] == 8_000
    assert judged_day.verdict is DayVerdict.RECONCILED
    # Settled here now: the line names nothing left to ask for.
    assert ask_refunded_pix_of_statement(api, engine, start, end).seen == 0
    assert api.asked == [e2e]


def test_a_pix_booked_past_the_date_lag_is_its_own_days_break_and_explains_the_next_days_line(
    engine: Engine,
) -> None:
    book = DayBook(engine, PAST)
    _clean_day(book)
    e2e = book.pix(4_000, "23:50", txid="latebookedpix01")
    book.confirm_all_pix()
    later = PAST + timedelta(days=1)
    next_day = DayBook(engine, later)
    next_day.balance = book.balance
    # Twenty minutes after midnight: past the five-minute lag.
    next_day.line("PIX_RECEIVED", 4_000, "00:20", credit=True, endToEndId=e2e)
    first = reconcile_day(engine, PAST, now=AFTER)
    own = verdicts_of(engine, first)[("movement", e2e)]
    assert (own.status, own.exception) == ("status_mismatch", True)
    second = reconcile_day(engine, later, now=business_day_bounds(later)[1] + timedelta(hours=2))
    line = verdicts_of(engine, second)[("movement", e2e)]
    # Not money nobody notified, to be given back: the Pix of the day before, booked late.
    assert (line.status, line.exception, line.carried) == ("matched", False, "in")
    assert second.report["bridge"]["residual_cents"] == 0
    assert not [e for e in second.report["exceptions"] if e["ref"] == e2e]


def test_a_line_booked_within_the_lag_for_a_movement_minutes_before_midnight_is_carried_in(
    engine: Engine,
) -> None:
    """A Pix at 23:54 and a payout at 23:00, each booked at 00:01 (inside the five-minute
    lag): their day counted them, carried out; the next day carries them in as within the
    lag, never as booked past it."""
    book = DayBook(engine, PAST)
    _clean_day(book)
    e2e = book.pix(4_000, "23:54")
    book.confirm_all_pix()
    book.transfer(book.payout_data("po-night", 7_000, "23:00"))
    book.confirm_all_movements()
    later = PAST + timedelta(days=1)
    next_day = DayBook(engine, later)
    next_day.balance = book.balance
    next_day.line("PIX_RECEIVED", 4_000, "00:01", credit=True, endToEndId=e2e)
    next_day.line("PIX_PAYMENT", 7_000, "00:01", credit=False, idempotencyKey="po-night")
    own = verdicts_of(engine, reconcile_day(engine, PAST, now=AFTER + timedelta(hours=1)))
    assert own[("movement", e2e)].carried == own[("payout", "po-night")].carried == "out"
    second = reconcile_day(engine, later, now=business_day_bounds(later)[1] + timedelta(hours=2))
    verdicts = verdicts_of(engine, second)
    pix_line, payout_line = verdicts[("movement", e2e)], verdicts[("payout", "po-night")]
    assert (pix_line.status, pix_line.carried, pix_line.reason) == (
        "matched",
        "in",
        "received the day before and booked today (carried in)",
    )
    assert (payout_line.status, payout_line.carried, payout_line.reason) == (
        "settled",
        "in",
        "paid out the day before and debited today (carried in)",
    )


def test_a_payout_debited_the_next_day_past_the_date_lag_explains_that_days_line(
    engine: Engine,
) -> None:
    book = DayBook(engine, PAST)
    _clean_day(book)
    book.transfer(book.payout_data("po-late-debit", 10_000, "16:00"))
    book.confirm_all_movements()
    later = PAST + timedelta(days=1)
    next_day = DayBook(engine, later)
    next_day.balance = book.balance
    next_day.line("PIX_PAYMENT", 10_000, "08:00", credit=False, idempotencyKey="po-late-debit")
    second = reconcile_day(engine, later, now=business_day_bounds(later)[1] + timedelta(hours=2))
    line = verdicts_of(engine, second)[("payout", "po-late-debit")]
    # Not "no payout was notified or polled": the payout of the day before, debited late.
    assert (line.status, line.exception, line.carried) == ("settled", False, "in")
    assert second.report["bridge"]["residual_cents"] == 0


def test_a_refund_the_api_does_not_know_is_called_so(engine: Engine) -> None:
    """A refund only a webhook announced, which the API denies: a possible forgery, not a
    statement late to book it."""
    book = DayBook(engine, PAST)
    e2e = _clean_day(book)
    rtr = "D99999008202603101500FORGEDREF01"
    asked = {
        "solicitacao": book.at("10:30").isoformat(),
        "liquidacao": book.at("10:31").isoformat(),
    }
    forged = {
        "id": "dev-f",
        "rtrId": rtr,
        "valor": "30.00",
        "status": "DEVOLVIDO",
        "horario": asked,
    }
    book.pix(15_000, "10:00", e2e=e2e, refunds=[forged], polled=False)
    with session_scope(engine) as session:
        session.execute(
            update(PixRefund)
            .where(col(PixRefund.rtr_id) == rtr)
            .values(confirmation=Confirmation.UNCONFIRMED_WEBHOOK.value)
        )
    result = reconcile_day(engine, PAST, now=AFTER)
    verdict = verdicts_of(engine, result)[("movement", rtr)]
    assert (verdict.status, verdict.exception) == ("unconfirmed_webhook", True)
    assert "does not know" in verdict.reason
    with session_scope(engine) as session:
        (case,) = [c for c in case_rows(session, day=PAST) if c["ref"] == rtr]
    assert case["action"].startswith("ask the provider about the refund of R$ 30,00")


def test_a_days_repeats_are_counted_as_of_its_end(engine: Engine) -> None:
    """A Pix delivered twice on its day and again the next (sent once more with a refund,
    say): its day counts one repeat whenever it is asked."""
    from reconcile.inbox import Delivery, store_deliveries

    book = DayBook(engine, PAST)
    _clean_day(book)
    body = {"endToEndId": "E99999008202603101400repeated001", "valor": "12.00"}
    body["horario"] = book.at("14:00").isoformat()
    items = pix_callback_items({"pix": [body]})

    def deliver(at: datetime) -> None:
        delivery = Delivery("/webhooks/qrcode/pix", None, {}, b"{}", items)
        with session_scope(engine) as session:
            new = store_deliveries(session, [delivery], now=at)[0].new_ids
        process_items(engine, new)

    for at in (book.at("14:00"), book.at("14:05"), book.at("09:00", PAST + timedelta(days=1))):
        deliver(at)
    book.confirm_all_pix()
    book.line("PIX_RECEIVED", 1_200, "14:00", credit=True, endToEndId=body["endToEndId"])
    later = business_day_bounds(PAST + timedelta(days=1))[1] + timedelta(hours=2)
    for now in (AFTER, later):
        judged = reconcile_day(engine, PAST, now=now)
        verdict = verdicts_of(engine, judged)[("movement", body["endToEndId"])]
        assert verdict.duplicate_webhooks == 1
        assert judged.report["deliveries"]["duplicate_webhooks"] == 1


def test_a_case_open_at_the_days_end_debited_nothing_by_then(engine: Engine) -> None:
    """Closed with its debit at 00:02 the next day, inside the date lag: its own day still
    saw it open, with nothing debited, however late that day is asked."""
    book = DayBook(engine, PAST)
    _clean_day(book)
    opened = {
        "id": "med-night",
        "status": "OPEN",
        "amount": "100.00",
        "blockedAmount": "100.00",
        "createdAt": book.at("15:00").isoformat(),
    }
    book.infraction(opened, webhook=False)
    later = PAST + timedelta(days=1)
    next_day = DayBook(engine, later)
    next_day.balance = book.balance
    closed_at = next_day.at("00:02").isoformat()
    book.infraction(
        {**opened, "status": "CLOSED", "debitedAmount": "100.00", "closedAt": closed_at},
        webhook=False,
    )
    next_day.line("INFRACTION_DEBIT", 10_000, "00:02", credit=False, infractionId="med-night")
    judged = reconcile_day(engine, PAST, now=business_day_bounds(later)[1] + timedelta(hours=2))
    case = verdicts_of(engine, judged)[("infraction", "med-night")]
    assert (case.status, case.expected_cents, case.actual_cents) == ("open_case", 10_000, None)
