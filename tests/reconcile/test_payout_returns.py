"""A payout's returns (the receiver sends the money back) are movements of the day each
happened: matched there against the statement's credit for it, counted in that day's
bridge, and never again on the payout's own day, whose answer stays what it was at its
end. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, delete, select, text
from sqlmodel import col

from migrations.apply import upgrade
from reconcile.cases import case_rows
from reconcile.db import create_db_engine, session_scope
from reconcile.matching.judgement import DayVerdict
from reconcile.models import InboxItem, PayoutReturn, Source
from reconcile.nightly import NightlyResult, reconcile_day
from reconcile.payloads.accounts import accounts_items
from reconcile.timeutil import as_utc, business_day_bounds
from tests.reconcile.day_book import DayBook, reais, verdicts_of

PAST = date(2026, 3, 10)
AFTER = business_day_bounds(PAST)[1] + timedelta(hours=2)
KEY = "po-supplier-0310"
PAYOUT_E2E = "E11111111202603101000abcdefghij1"
FIRST = "D22222222202603101500abcdefghij1"
SECOND = "D22222222202603110900abcdefghij2"


def _paid_out(book: DayBook) -> dict[str, Any]:
    """A payout of R$ 100,00 at 10:00, notified, and debited by the statement a minute
    later; its notification's data, for the returns to list."""
    data = book.payout_data(KEY, 10_000, "10:00", endToEndId=PAYOUT_E2E)
    book.transfer(data)
    book.line(
        "PIX_PAYMENT", 10_000, "10:01", credit=False, idempotencyKey=KEY, endToEndId=PAYOUT_E2E
    )
    return data


def _returned(
    book: DayBook,
    data: dict[str, Any],
    returns: list[tuple[str, int, str]],
    kind: str = "REFUND",
    source: Source = Source.WEBHOOK,
) -> None:
    """The payout's notification of a return (``REFUND``, or the payout's own ``TRANSFER``
    in its new state), listing every return so far (as the provider's payout shape does),
    each with its own time."""
    total = sum(cents for _, cents, _ in returns)
    listed = [
        {
            "endToEndId": e2e,
            "status": "LIQUIDATED",
            "pixRefundAmount": reais(cents),
            "createdAt": book.at(clock, day).isoformat(),
        }
        for e2e, cents, (clock, day) in ((e, c, _when(book, w)) for e, c, w in returns)
    ]
    status = "REFUNDED" if total >= 10_000 else "PARTIALLY_REFUNDED"
    items = accounts_items({"type": kind, "data": {**data, "status": status, "refunds": listed}})
    book._store(items, source)


def _when(book: DayBook, when: str) -> tuple[str, date]:
    """``HH:MM`` on the book's day, or ``-1 HH:MM`` on the day before."""
    if when.startswith("-1 "):
        return when[3:], book.day - timedelta(days=1)
    return when, book.day


def _bridge(result: NightlyResult, category: str) -> dict[str, Any]:
    rows = result.summary["bridge"]["categories"]
    return next(row for row in rows if row["category"] == category)


def _figures(result: NightlyResult) -> list[tuple[Any, ...]]:
    return [
        (
            row["category"],
            row["webhook_cents"],
            row["api_cents"],
            row["statement_cents"],
            row["difference_cents"],
        )
        for row in (_bridge(result, "payouts"), _bridge(result, "payout_returns"))
    ]


def test_a_payout_returned_the_next_days_is_judged_on_each_day_as_of_its_end(
    engine: Engine,
) -> None:
    book = DayBook(engine, PAST)
    data = _paid_out(book)
    # A first part returned the same afternoon.
    _returned(book, data, [(FIRST, 4_000, "15:00")])
    book.line(
        "PIX_PAYMENT_REFUND",
        4_000,
        "15:01",
        credit=True,
        idempotencyKey=KEY,
        endToEndId=FIRST,
        originalEndToEndId=PAYOUT_E2E,
    )
    book.confirm_all_movements()
    day = reconcile_day(engine, PAST, now=AFTER)
    verdicts = verdicts_of(engine, day)

    assert day.verdict == DayVerdict.RECONCILED
    payout = verdicts[("payout", KEY)]
    # R$ 60,00 of it is still out at the day's end: not "refunded".
    assert (payout.status, payout.actual_cents) == ("partially_refunded", 10_000)
    first = verdicts[("movement", "return:" + FIRST)]
    assert (first.status, first.exception) == ("matched", False)
    assert (first.expected_cents, first.actual_cents) == (4_000, 4_000)
    assert _figures(day) == [
        ("payouts", 10_000, 10_000, 10_000, 0),
        ("payout_returns", 4_000, 4_000, 4_000, 0),
    ]

    # The rest comes back the next morning.
    after = book.next_day()
    _returned(after, data, [(FIRST, 4_000, "-1 15:00"), (SECOND, 6_000, "09:00")])
    after.line(
        "PIX_PAYMENT_REFUND",
        6_000,
        "09:01",
        credit=True,
        idempotencyKey=KEY,
        endToEndId=SECOND,
        originalEndToEndId=PAYOUT_E2E,
    )
    book.confirm_all_movements()
    next_day = reconcile_day(engine, PAST + timedelta(days=1), now=AFTER + timedelta(days=1))
    later = verdicts_of(engine, next_day)
    assert next_day.verdict == DayVerdict.RECONCILED
    second = later[("movement", "return:" + SECOND)]
    assert (second.status, second.exception, second.actual_cents) == ("matched", False, 6_000)
    # Only the return of the day: the payout and its first return belong to the day before.
    assert set(later) == {("movement", "return:" + SECOND)}
    assert _figures(next_day) == [
        ("payouts", 0, 0, 0, 0),
        ("payout_returns", 6_000, 6_000, 6_000, 0),
    ]

    again = reconcile_day(engine, PAST, now=AFTER + timedelta(days=3))
    assert again.verdict == day.verdict
    assert _figures(again) == _figures(day)
    assert {
        ref: (v.status, v.exception, v.expected_cents, v.actual_cents)
        for ref, v in verdicts_of(engine, again).items()
    } == {
        ref: (v.status, v.exception, v.expected_cents, v.actual_cents)
        for ref, v in verdicts.items()
    }


@pytest.mark.parametrize("kind", ["REFUND", "TRANSFER"])
def test_a_payout_returned_only_days_later_was_settled_on_its_day(
    engine: Engine, kind: str
) -> None:
    book = DayBook(engine, PAST)
    data = _paid_out(book)
    book.confirm_all_movements()
    day = reconcile_day(engine, PAST, now=AFTER)

    later = DayBook(engine, PAST + timedelta(days=2), book.balance)
    _returned(later, data, [(SECOND, 10_000, "09:00")], kind)
    if kind == "TRANSFER":
        # The payout's own row now holds its new state, which waits for its look-up like
        # any notified state; a REFUND notification is a row of its own and is asked about
        # the day before while still unconfirmed.
        book.confirm_all_movements()
    again = reconcile_day(engine, PAST, now=AFTER + timedelta(days=2))
    payout = verdicts_of(engine, again)[("payout", KEY)]
    assert (payout.status, payout.exception) == ("settled", False)
    assert again.verdict == day.verdict == DayVerdict.RECONCILED
    assert _figures(again) == _figures(day)


@pytest.mark.parametrize(
    ("keys", "ref", "e2e"),
    [
        (
            {"idempotencyKey": "po-nobody-told-us", "endToEndId": SECOND},
            SECOND,
            SECOND,
        ),
        ({"endToEndId": SECOND}, SECOND, SECOND),
        ({"idempotencyKey": "po-nobody-told-us"}, "po-nobody-told-us", None),
        ({"originalEndToEndId": PAYOUT_E2E}, PAYOUT_E2E, PAYOUT_E2E),
    ],
    ids=["return-and-payout", "return-only", "payout-key-only", "payout-e2e-only"],
)
def test_a_return_credited_without_a_notified_one_is_an_exception(
    engine: Engine, keys: dict[str, Any], ref: str, e2e: str | None
) -> None:
    book = DayBook(engine, PAST)
    book.line("PIX_PAYMENT_REFUND", 2_500, "09:01", credit=True, **keys)
    result = reconcile_day(engine, PAST, now=AFTER)
    verdict = verdicts_of(engine, result)[("movement", "return:" + ref)]
    assert (verdict.status, verdict.exception, verdict.expected_cents) == (
        "missing_webhook",
        True,
        2_500,
    )
    assert result.verdict == DayVerdict.BREAKS
    assert _bridge(result, "payout_returns")["difference_cents"] == 2_500
    with session_scope(engine) as session:
        (case,) = case_rows(session, day=PAST)
    assert case["ref"] == "return:" + ref
    # The reference a person looks the line up by: what the line names.
    assert case["end_to_end_id"] == e2e
    assert case["action"] == (
        "ask the provider which payout the R$ 25,00 credited as a return belongs to, and pay "
        "nobody again until you know"
    )


def test_a_return_and_a_payout_found_by_polling_only_say_so(engine: Engine) -> None:
    """No notification of the return came: it is not "notified", and the movement and the
    payout say how each came, as every other movement does."""
    book = DayBook(engine, PAST)
    data = book.payout_data(KEY, 10_000, "10:00", endToEndId=PAYOUT_E2E)
    book.transfer(data, webhook=False, polled=True)
    book.line(
        "PIX_PAYMENT", 10_000, "10:01", credit=False, idempotencyKey=KEY, endToEndId=PAYOUT_E2E
    )
    _returned(book, data, [(FIRST, 2_500, "15:00")], kind="TRANSFER", source=Source.POLL)
    book.line("PIX_PAYMENT_REFUND", 2_500, "15:00", credit=True, endToEndId=FIRST)
    book.confirm_all_movements()
    result = reconcile_day(engine, PAST, now=AFTER)
    verdicts = verdicts_of(engine, result)
    returned = verdicts[("movement", "return:" + FIRST)]
    assert (returned.status, returned.exception, returned.source) == (
        "missing_webhook",
        False,
        "poll",
    )
    assert returned.reason == "a payout return found by polling only: no webhook came"
    assert verdicts[("payout", KEY)].source == "poll"
    assert result.verdict == DayVerdict.RECONCILED


def test_a_return_the_statement_never_credits_is_an_exception(engine: Engine) -> None:
    book = DayBook(engine, PAST)
    data = _paid_out(book)
    _returned(book, data, [(FIRST, 10_000, "15:00")])
    book.confirm_all_movements()
    result = reconcile_day(engine, PAST, now=AFTER)
    verdict = verdicts_of(engine, result)[("movement", "return:" + FIRST)]
    assert (verdict.status, verdict.exception, verdict.actual_cents) == (
        "status_mismatch",
        True,
        10_000,
    )
    assert result.verdict == DayVerdict.BREAKS


def test_each_return_is_kept_once_dated_by_its_own_time_else_when_first_listed(
    engine: Engine,
) -> None:
    book = DayBook(engine, PAST)
    data = book.payout_data(KEY, 10_000, "10:00", endToEndId=PAYOUT_E2E)
    undated = {"endToEndId": FIRST, "status": "LIQUIDATED", "pixRefundAmount": "40.00"}
    first = {**data, "status": "PARTIALLY_REFUNDED", "refunds": [undated]}
    book._store(accounts_items({"type": "REFUND", "data": first}), Source.WEBHOOK)
    with session_scope(engine) as session:
        heard = session.execute(select(col(InboxItem.received_at))).scalars().one()
    dated = {**undated, "endToEndId": SECOND, "pixRefundAmount": "60.00"}
    dated["createdAt"] = book.at("16:00").isoformat()
    both = {**data, "status": "REFUNDED", "refunds": [undated, dated]}
    book._store(accounts_items({"type": "REFUND", "data": both}), Source.POLL)

    with session_scope(engine) as session:
        rows = session.execute(select(PayoutReturn).order_by(col(PayoutReturn.ref))).scalars().all()
        kept = [(r.payout_key, r.ref, r.amount_cents, as_utc(r.returned_at)) for r in rows]
    assert kept == [
        # Listed again by the second notification: still dated when first heard of.
        (KEY, FIRST, 4_000, as_utc(heard)),
        (KEY, SECOND, 6_000, book.at("16:00")),
    ]


def test_the_migration_keeps_the_returns_of_payouts_stored_before_it(blank_url: str) -> None:
    engine = create_db_engine(blank_url)
    upgrade(engine, "0021")
    heard = datetime(2026, 3, 10, 18, 0, tzinfo=UTC)
    undated = {"endToEndId": FIRST, "status": "LIQUIDATED", "pixRefundAmount": "40.00"}
    dated = {
        "endToEndId": SECOND,
        "status": "LIQUIDATED",
        "pixRefundAmount": "60.00",
        "createdAt": "2026-03-11T09:00:00-03:00",
    }
    payload = {"type": "REFUND", "data": {"idempotencyKey": KEY, "refunds": [undated, dated]}}
    with engine.begin() as connection:
        item = connection.execute(
            text(
                "INSERT INTO inbox_item (source, kind, key, payload, status, received_at, "
                "last_seen_at, webhook_count, poll_count, attempts) VALUES ('webhook', "
                "'accounts.refund', 'k', :payload, 'processed', :at, :at, 1, 0, 0) RETURNING id"
            ),
            {"payload": json.dumps(payload), "at": heard},
        ).scalar_one()
        connection.execute(
            text(
                "INSERT INTO account_movement (type, reference, idempotency_key, status, "
                "amount_cents, refunded_cents, rank, inbox_item_id, updated_at, confirmation, "
                "check_attempts) VALUES ('REFUND', 'id-1', :key, 'REFUNDED', 10000, 10000, "
                "4002, :item, :at, 'confirmed', 0)"
            ),
            {"key": KEY, "item": item, "at": heard},
        )
    upgrade(engine)
    with session_scope(engine) as session:
        rows = session.execute(select(PayoutReturn).order_by(col(PayoutReturn.ref))).scalars()
        kept = [(r.payout_key, r.ref, r.amount_cents, as_utc(r.returned_at)) for r in rows]
    engine.dispose()
    assert kept == [
        (KEY, FIRST, 4_000, heard),
        (KEY, SECOND, 6_000, datetime(2026, 3, 11, 12, 0, tzinfo=UTC)),
    ]


def test_a_difference_no_item_explains_is_an_exception_not_a_reconciled_day(
    engine: Engine,
) -> None:
    book = DayBook(engine, PAST)
    data = _paid_out(book)
    later = DayBook(engine, PAST + timedelta(days=2), book.balance)
    _returned(later, data, [(SECOND, 10_000, "09:00")])
    book.confirm_all_movements()
    # A payout whose returns were never kept apart (stored before they were, its
    # notification since emptied by retention): only its row's sum is known, which the
    # bridge counts on the payout's own day, where the statement credited nothing.
    with session_scope(engine) as session:
        session.execute(delete(PayoutReturn))
    result = reconcile_day(engine, PAST, now=AFTER + timedelta(days=2))

    returns = _bridge(result, "payout_returns")
    assert (returns["api_cents"], returns["statement_cents"]) == (10_000, 0)
    flagged = verdicts_of(engine, result)[("statement", "bridge:payout_returns")]
    assert (flagged.status, flagged.exception) == ("unexplained", True)
    assert (flagged.expected_cents, flagged.actual_cents) == (0, 10_000)
    assert "differ from what the provider's API stands behind by" in flagged.reason
    assert result.verdict == DayVerdict.BREAKS
    with session_scope(engine) as session:
        (case,) = case_rows(session, day=PAST)
    assert case["action"].startswith("compare the day's statement with pixrecon's items")
    assert "R$ 100,00" in case["action"]
