"""An exception's amounts and its action name each source's figure the right way round:
where they disagree, ``actual`` is what was notified and ``expected`` what the provider's
API or statement stands behind (a line nobody notified: what it booked, in both), and the
action a person reads says which is which. On SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from sqlalchemy import Engine, update
from sqlmodel import col

from reconcile.actions import suggested_action
from reconcile.cases import case_rows
from reconcile.db import session_scope
from reconcile.models import Confirmation, PixReceived
from reconcile.nightly import reconcile_day
from reconcile.timeutil import business_day_bounds
from tests.reconcile.day_book import DayBook, verdicts_of

PAST = date(2026, 3, 10)
AFTER = business_day_bounds(PAST)[1] + timedelta(hours=2)


def _cases(engine: Engine) -> dict[str, dict[str, Any]]:
    reconcile_day(engine, PAST, now=AFTER)
    with session_scope(engine) as session:
        return {row["ref"]: row for row in case_rows(session, day=PAST)}


def _shown(case: dict[str, Any]) -> tuple[str, int | None, int | None, str]:
    return case["status"], case["expected_cents"], case["actual_cents"], case["action"]


def test_pix_whose_sources_disagree_name_each_amount(engine: Engine) -> None:
    book = DayBook(engine, PAST)
    booked_more = book.pix(2_000, "09:00")
    api_says_more = book.pix(3_000, "10:00", polled=False)
    book.confirm_all_pix()
    with session_scope(engine) as session:
        session.execute(
            update(PixReceived)
            .where(col(PixReceived.end_to_end_id) == api_says_more)
            .values(confirmation=Confirmation.AMOUNT_MISMATCH.value, confirmed_amount_cents=3_500)
        )
    book.line("PIX_RECEIVED", 2_500, "09:01", credit=True, endToEndId=booked_more)
    book.line("PIX_RECEIVED", 3_500, "10:01", credit=True, endToEndId=api_says_more)
    unnotified = "E99999999202603101200nobodysaid01"
    book.line("PIX_RECEIVED", 4_000, "12:00", credit=True, endToEndId=unnotified)

    cases = _cases(engine)

    assert _shown(cases[booked_more]) == (
        "amount_mismatch",
        2_500,
        2_000,
        "ask the provider: notified R$ 20,00, it stands behind R$ 25,00",
    )
    assert _shown(cases[api_says_more]) == (
        "amount_mismatch",
        3_500,
        3_000,
        "ask the provider: notified R$ 30,00, it stands behind R$ 35,00",
    )
    assert _shown(cases[unnotified]) == (
        "missing_webhook",
        4_000,
        4_000,
        "a payment of R$ 40,00 nobody notified: match it to an order, or refund it before "
        "08/06/2026",
    )


def test_a_payout_debited_with_another_amount_names_both(engine: Engine) -> None:
    book = DayBook(engine, PAST)
    book.transfer(book.payout_data("po-0310", 5_000, "10:00"))
    book.line("PIX_PAYMENT", 5_500, "10:01", credit=False, idempotencyKey="po-0310")
    book.confirm_all_movements()

    cases = _cases(engine)

    assert _shown(cases["po-0310"]) == (
        "amount_mismatch",
        5_500,
        5_000,
        "ask the provider why the statement debited R$ 55,00 for a payout notified as R$ 50,00",
    )


def test_the_net_of_a_pix_is_only_money_the_provider_stands_behind(engine: Engine) -> None:
    """An export's net column is what finance books: never a forged or unconfirmed Pix,
    and the API's amount where it contradicts the notification."""
    book = DayBook(engine, PAST)
    agreed = book.pix(1_000, "09:00")
    forged = book.pix(6_000, "09:30", polled=False)
    disputed = book.pix(3_000, "10:00", polled=False)
    waiting = book.pix(2_000, "23:58", polled=False)
    book.confirm_all_pix()
    with session_scope(engine) as session:
        for e2e, confirmation, stated in (
            (forged, Confirmation.UNCONFIRMED_WEBHOOK, None),
            (disputed, Confirmation.AMOUNT_MISMATCH, 3_500),
            (waiting, Confirmation.PENDING, None),
        ):
            session.execute(
                update(PixReceived)
                .where(col(PixReceived.end_to_end_id) == e2e)
                .values(confirmation=confirmation.value, confirmed_amount_cents=stated)
            )
    for e2e, cents in ((agreed, 1_000), (forged, 6_000), (disputed, 3_500), (waiting, 2_000)):
        book.line("PIX_RECEIVED", cents, "23:59", credit=True, endToEndId=e2e)

    result = reconcile_day(engine, PAST, now=AFTER)

    net = {ref: verdict.net_cents for (_, ref), verdict in verdicts_of(engine, result).items()}
    assert (net[agreed], net[forged], net[disputed], net[waiting]) == (1_000, None, 3_500, None)


def test_a_pix_notified_with_another_amount_counts_as_the_api_states_it(engine: Engine) -> None:
    """The API's amount replaces the webhook's (docs/design.md §1.5): the bridge's API
    column counts the money the API stands behind, not nothing, and the charge the Pix
    paid is judged by that amount, as the movements matcher judges the Pix itself."""
    book = DayBook(engine, PAST)
    txid = "orderpaidwithanotheramount0001"
    book.charge("cob", txid, 4_500, "08:00", expiracao=86_400)
    other = book.pix(10_000, "09:00")
    inflated = book.pix(450_000, "10:00", polled=False, txid=txid)
    book.confirm_all_pix()
    with session_scope(engine) as session:
        session.execute(
            update(PixReceived)
            .where(col(PixReceived.end_to_end_id) == inflated)
            .values(confirmation=Confirmation.AMOUNT_MISMATCH.value, confirmed_amount_cents=4_500)
        )
    book.line("PIX_RECEIVED", 10_000, "09:01", credit=True, endToEndId=other)
    book.line("PIX_RECEIVED", 4_500, "10:01", credit=True, endToEndId=inflated)

    result = reconcile_day(engine, PAST, now=AFTER)

    bridge = result.summary["bridge"]["categories"]
    row = next(r for r in bridge if r["category"] == "pix_received")
    assert (row["webhook_cents"], row["api_cents"], row["statement_cents"]) == (
        460_000,
        14_500,
        14_500,
    )
    assert row["difference_cents"] == 0
    assert result.summary["totals"]["credits"]["api"] == 14_500
    verdicts = verdicts_of(engine, result)
    assert verdicts[("movement", inflated)].status == "amount_mismatch"
    charge = verdicts[("charge", f"cob:{txid}")]
    assert (charge.status, charge.expected_cents, charge.actual_cents) == ("paid", 4_500, 4_500)


def test_a_refund_debited_that_nobody_notified_is_asked_about_not_given_back() -> None:
    action = suggested_action(
        "movement", "missing_webhook", 4_000, None, ref="D99999008202603110300refundlate1"
    )
    assert action == (
        "ask the provider which Pix the refund of R$ 40,00 debited returns: no refund of that "
        "id was notified or polled"
    )
