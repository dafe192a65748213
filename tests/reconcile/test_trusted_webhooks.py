"""With ``PIXRECON_CONFIRM_POLICY=none`` notified money counts without a look-up, by the
merchant's choice, but the bridge's API column still says only what the provider's API
stood behind: a Pix it listed when polled, never one only a webhook announced."""

from __future__ import annotations

from datetime import date, timedelta

from sqlalchemy import Engine, update
from sqlmodel import col

from reconcile.confirmation import waive_confirmation
from reconcile.db import session_scope
from reconcile.matching.judgement import Sources
from reconcile.models import AccountMovement, Confirmation, Source
from reconcile.nightly import reconcile_day
from reconcile.payloads.accounts import accounts_items
from reconcile.timeutil import business_day_bounds
from tests.factories import e2e_id
from tests.reconcile.day_book import DayBook, reais, verdicts_of

PAST = date(2026, 3, 10)
AFTER = business_day_bounds(PAST)[1] + timedelta(hours=2)


def test_money_only_a_webhook_announced_is_not_the_apis(engine: Engine) -> None:
    book = DayBook(engine, PAST)
    real = book.pix(5_000, "10:00")  # notified, and listed by the API when polled
    book.line("PIX_RECEIVED", 5_000, "10:01", credit=True, endToEndId=real)
    forged = book.pix(5_500, "11:00", polled=False)
    assert waive_confirmation(engine) == 2

    day = reconcile_day(engine, PAST, now=AFTER, sources=Sources(confirm_policy="none"))
    row = next(r for r in day.summary["bridge"]["categories"] if r["category"] == "pix_received")
    assert (row["webhook_cents"], row["api_cents"], row["statement_cents"]) == (
        10_500,
        5_000,
        5_000,
    )
    assert row["difference_cents"] == 0
    assert day.summary["totals"]["credits"]["api"] == 5_000
    verdicts = verdicts_of(engine, day)
    assert verdicts[("movement", real)].status == "matched"
    # Trusted, so judged: never booked, it is the day's exception.
    assert verdicts[("movement", forged)].status == "status_mismatch"
    assert verdicts[("movement", forged)].exception


def _credit(book: DayBook, reference: str, cents: int, e2e: str) -> None:
    """A Pix credit as the accounts API notifies it (``RECEIVE``)."""
    data = {
        "id": reference,
        "endToEndId": e2e,
        "status": "LIQUIDATED",
        "createdAt": book.at("12:00").isoformat(),
        "payment": {"currency": "BRL", "amount": reais(cents)},
        "creditDebitType": "CREDIT",
    }
    book._store(accounts_items({"type": "RECEIVE", "data": data}), Source.WEBHOOK)


def _confirmed_as(engine: Engine, reference: str, confirmation: Confirmation, cents: int) -> None:
    with session_scope(engine) as session:
        session.execute(
            update(AccountMovement)
            .where(col(AccountMovement.reference) == reference)
            .values(confirmation=confirmation.value, confirmed_amount_cents=cents)
        )


def test_a_credit_notified_by_the_accounts_api_counts_only_as_the_provider_states_it(
    engine: Engine,
) -> None:
    book = DayBook(engine, PAST)
    real = book.pix(5_000, "10:00")
    book.line("PIX_RECEIVED", 5_000, "10:01", credit=True, endToEndId=real)
    _credit(book, "rcv-real", 5_000, real)
    _credit(book, "rcv-forged", 7_700, e2e_id())
    _credit(book, "rcv-inflated", 500_000, real)
    _confirmed_as(engine, "rcv-real", Confirmation.CONFIRMED, 5_000)
    _confirmed_as(engine, "rcv-forged", Confirmation.UNCONFIRMED_WEBHOOK, 0)
    _confirmed_as(engine, "rcv-inflated", Confirmation.AMOUNT_MISMATCH, 5_000)

    day = reconcile_day(engine, PAST, now=AFTER)
    verdicts = verdicts_of(engine, day)
    assert ("movement", "credit:rcv-real") not in verdicts
    forged = verdicts[("movement", "credit:rcv-forged")]
    # Only notified: what it stated is expected, and nothing moved by it.
    assert (forged.status, forged.exception, forged.expected_cents, forged.actual_cents) == (
        "unconfirmed_webhook",
        True,
        7_700,
        None,
    )
    inflated = verdicts[("movement", "credit:rcv-inflated")]
    assert (inflated.status, inflated.expected_cents, inflated.actual_cents) == (
        "amount_mismatch",
        5_000,
        500_000,
    )
    assert day.summary["verdict"] == "breaks"
    # Named as the accounts API named it: by its endToEndId, not by the ref's prefix.
    rows = {row["ref"]: row for row in day.report["exceptions"]}
    assert rows["credit:rcv-inflated"]["end_to_end_id"] == real
    assert rows["credit:rcv-forged"]["end_to_end_id"] not in (None, "credit")
    # A notified credit is no money of the bridge's: the Pix alone, once.
    assert day.summary["totals"]["credits"]["webhook"] == 5_000


def test_a_credit_never_confirmed_is_pending_then_an_exception(engine: Engine) -> None:
    book = DayBook(engine, PAST)
    _credit(book, "rcv-waiting", 1_000, e2e_id())
    with session_scope(engine) as session:
        session.execute(
            update(AccountMovement)
            .where(col(AccountMovement.reference) == "rcv-waiting")
            .values(updated_at=book.at("12:00"))
        )
    # Judged provisionally inside its grace period: it waits; past it, it is an exception.
    inside = reconcile_day(engine, PAST, now=book.at("12:00") + timedelta(seconds=30))
    assert verdicts_of(engine, inside)[("movement", "credit:rcv-waiting")].status == "pending"
    day = reconcile_day(engine, PAST, now=AFTER)
    waited = verdicts_of(engine, day)[("movement", "credit:rcv-waiting")]
    assert (waited.status, waited.exception) == ("unconfirmed_webhook", True)
