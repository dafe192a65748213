"""A payout's statement debit (``PIX_PAYMENT``) names the payout by its idempotencyKey, by
its endToEndId, or both: whichever it carries, it is matched to the payout notified with
it, and a debit no payout explains is that payout's exception. A payout is judged on the
day its money moved: a scheduled Pix on the day it was initiated. On SQLite and
PostgreSQL."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, select, text

from migrations.apply import upgrade
from reconcile.cases import case_rows
from reconcile.db import create_db_engine, session_scope
from reconcile.matching.judgement import DayVerdict
from reconcile.models import AccountMovement
from reconcile.nightly import NightlyResult, reconcile_day
from reconcile.payloads.pix import moved_later
from reconcile.timeutil import as_utc, business_day_bounds
from tests.reconcile.day_book import DayBook, verdicts_of

PAST = date(2026, 3, 10)
AFTER = business_day_bounds(PAST)[1] + timedelta(hours=2)
KEY = "po-supplier-0310"
PAYOUT_E2E = "E11111111202603101000abcdefghij1"


def _payouts(result: NightlyResult) -> dict[str, Any]:
    rows = result.summary["bridge"]["categories"]
    return next(row for row in rows if row["category"] == "payouts")


@pytest.mark.parametrize(
    "keys",
    [
        {"idempotencyKey": KEY, "endToEndId": PAYOUT_E2E},
        {"idempotencyKey": KEY},
        {"endToEndId": PAYOUT_E2E},
    ],
    ids=["both", "key-only", "e2e-only"],
)
def test_a_debit_is_matched_to_its_payout_by_whichever_key_it_carries(
    engine: Engine, keys: dict[str, Any]
) -> None:
    book = DayBook(engine, PAST)
    book.transfer(book.payout_data(KEY, 10_000, "10:00", endToEndId=PAYOUT_E2E))
    book.line("PIX_PAYMENT", 10_000, "10:01", credit=False, **keys)
    book.confirm_all_movements()
    result = reconcile_day(engine, PAST, now=AFTER)
    verdicts = verdicts_of(engine, result)

    assert result.verdict == DayVerdict.RECONCILED
    payout = verdicts[("payout", KEY)]
    assert (payout.status, payout.exception) == ("settled", False)
    assert (payout.expected_cents, payout.actual_cents) == (10_000, 10_000)
    assert payout.statement_entry_id is not None
    assert [key for key in verdicts if key[0] == "payout"] == [("payout", KEY)]
    figures = _payouts(result)
    assert (figures["statement_cents"], figures["api_cents"], figures["difference_cents"]) == (
        10_000,
        10_000,
        0,
    )


def test_a_debit_naming_only_an_unknown_end_to_end_id_is_a_missing_payout(
    engine: Engine,
) -> None:
    book = DayBook(engine, PAST)
    book.line("PIX_PAYMENT", 7_500, "11:00", credit=False, endToEndId=PAYOUT_E2E)
    result = reconcile_day(engine, PAST, now=AFTER)
    verdict = verdicts_of(engine, result)[("payout", PAYOUT_E2E)]

    assert (verdict.status, verdict.exception, verdict.expected_cents) == (
        "missing_webhook",
        True,
        7_500,
    )
    assert result.verdict == DayVerdict.BREAKS
    assert _payouts(result)["statement_cents"] == 7_500
    with session_scope(engine) as session:
        (case,) = case_rows(session, day=PAST)
    assert (case["ref"], case["end_to_end_id"]) == (PAYOUT_E2E, PAYOUT_E2E)
    assert case["action"] == (
        "ask the provider which payout the R$ 75,00 debited belongs to, and pay nobody again "
        "until you know"
    )


SCHEDULED = "po-scheduled-0310"
# Initiated on 12/03 at 09:00 in São Paulo (12:00 UTC), two days after it was created.
SCHEDULED_E2E = "E11111111202603121200schedule001"


def _scheduled(book: DayBook, status: str, e2e: str | None = None) -> None:
    """A Pix of R$ 300,00 scheduled on 10/03 at 15:00: the provider's createdAt stays that
    time in every notification of it; the endToEndId comes when it is initiated."""
    data = book.payout_data(SCHEDULED, 30_000, "15:00", status=status, endToEndId=e2e)
    data["createdAt"] = book.at("15:00", PAST).isoformat()
    book.transfer(data)


def _a_paid_payout(book: DayBook, key: str) -> None:
    """Any day's ordinary business: a payout of R$ 100,00 paid and debited."""
    book.transfer(book.payout_data(key, 10_000, "10:00"))
    book.line("PIX_PAYMENT", 10_000, "10:01", credit=False, idempotencyKey=key)


def test_a_scheduled_payout_is_judged_on_the_day_its_money_moved(engine: Engine) -> None:
    book = DayBook(engine, PAST)
    _a_paid_payout(book, "po-ordinary-0310")
    _scheduled(book, "PROCESSING")
    book.confirm_all_movements()
    first = reconcile_day(engine, PAST, now=AFTER)
    assert first.verdict == DayVerdict.RECONCILED_WITH_PENDING
    assert verdicts_of(engine, first)[("payout", SCHEDULED)].status == "pending"

    # Two days later the provider initiates it, notifies it paid, and debits it.
    later = book.next_day().next_day()
    _scheduled(later, "LIQUIDATED", SCHEDULED_E2E)
    later.line("PIX_PAYMENT", 30_000, "09:01", credit=False, idempotencyKey=SCHEDULED)
    _a_paid_payout(later, "po-ordinary-0312")
    book.confirm_all_movements()
    after_both = business_day_bounds(later.day)[1] + timedelta(hours=2)

    its_day = reconcile_day(engine, later.day, now=after_both)
    payout = verdicts_of(engine, its_day)[("payout", SCHEDULED)]
    assert (payout.status, payout.exception, payout.carried) == ("settled", False, None)
    assert (payout.expected_cents, payout.actual_cents) == (30_000, 30_000)
    assert its_day.verdict == DayVerdict.RECONCILED
    assert _payouts(its_day)["difference_cents"] == 0

    # Asked again, the day it was created shows it as it stood at that day's end, still to
    # be paid, and the money it moved: none of this payout.
    again = reconcile_day(engine, PAST, now=after_both)
    assert again.verdict == first.verdict == DayVerdict.RECONCILED_WITH_PENDING
    scheduled = verdicts_of(engine, again)[("payout", SCHEDULED)]
    assert (scheduled.status, scheduled.reason, scheduled.carried) == (
        "pending",
        "still processing",
        None,
    )
    figures = _payouts(again)
    assert (figures["api_cents"], figures["statement_cents"], figures["difference_cents"]) == (
        10_000,
        10_000,
        0,
    )


def test_a_scheduled_payout_never_debited_is_the_exception_of_its_day(engine: Engine) -> None:
    book = DayBook(engine, PAST)
    _a_paid_payout(book, "po-ordinary-0310")
    later = book.next_day().next_day()
    _a_paid_payout(later, "po-ordinary-0312")
    _scheduled(later, "LIQUIDATED", SCHEDULED_E2E)
    book.confirm_all_movements()
    after_both = business_day_bounds(later.day)[1] + timedelta(hours=2)

    its_day = reconcile_day(engine, later.day, now=after_both)
    payout = verdicts_of(engine, its_day)[("payout", SCHEDULED)]
    assert (payout.status, payout.exception) == ("status_mismatch", True)
    assert its_day.verdict == DayVerdict.BREAKS
    # Its creation day had it scheduled at its end: pending there, not its break.
    created = reconcile_day(engine, PAST, now=after_both)
    assert created.verdict == DayVerdict.RECONCILED_WITH_PENDING
    assert verdicts_of(engine, created)[("payout", SCHEDULED)].exception is False


def test_a_payout_scheduled_just_past_midnight_leaves_its_line_to_the_day_it_moved(
    engine: Engine,
) -> None:
    """Initiated at 00:02, inside the date lag: its creation day shows it pending and does
    not take the line, which the next day matches to it (not carried across)."""
    book = DayBook(engine, PAST)
    _a_paid_payout(book, "po-ordinary-0310")
    following = book.next_day()
    e2e = "E11111111202603110302schedule002"  # 00:02 in São Paulo on 11/03
    data = book.payout_data("po-midnight", 20_000, "15:00", endToEndId=e2e)
    book.transfer(data)
    following.line("PIX_PAYMENT", 20_000, "00:02", credit=False, idempotencyKey="po-midnight")
    book.confirm_all_movements()
    after = business_day_bounds(following.day)[1] + timedelta(hours=2)

    created = reconcile_day(engine, PAST, now=after)
    pending = verdicts_of(engine, created)[("payout", "po-midnight")]
    assert (pending.status, pending.statement_entry_id, pending.carried) == ("pending", None, None)
    assert _payouts(created)["carried_out_cents"] == 0
    moved = reconcile_day(engine, following.day, now=after)
    paid = verdicts_of(engine, moved)[("payout", "po-midnight")]
    assert (paid.status, paid.carried, paid.expected_cents) == ("settled", None, 20_000)
    assert moved.verdict == DayVerdict.RECONCILED


@pytest.mark.parametrize(
    ("created", "e2e", "moved"),
    [
        # Scheduled: initiated two days after it was created.
        (datetime(2026, 3, 10, 18, 0, tzinfo=UTC), SCHEDULED_E2E, datetime(2026, 3, 12, 12, 0)),
        # Initiated as it was created: the endToEndId's minute is the creation's.
        (datetime(2026, 3, 12, 12, 0, 40, tzinfo=UTC), SCHEDULED_E2E, None),
        # Created after the time its endToEndId says: the creation stands.
        (datetime(2026, 3, 12, 12, 5, tzinfo=UTC), SCHEDULED_E2E, None),
        # No creation time: the endToEndId's is the only one.
        (None, SCHEDULED_E2E, datetime(2026, 3, 12, 12, 0)),
        # No time in the id (month 13; not an E id; more than a year ahead).
        (None, "E11111111202613121200schedule001", None),
        (None, "D11111111202603121200schedule001", None),
        (datetime(2025, 3, 1, tzinfo=UTC), SCHEDULED_E2E, None),
        (None, None, None),
    ],
)
def test_a_payout_moved_when_its_pix_was_initiated(
    created: datetime | None, e2e: str | None, moved: datetime | None
) -> None:
    expected = moved.replace(tzinfo=UTC) if moved is not None else None
    assert moved_later(created, e2e) == expected


def test_the_migration_dates_the_scheduled_payouts_stored_before_it(blank_url: str) -> None:
    engine = create_db_engine(blank_url)
    upgrade(engine, "0022")
    created = datetime(2026, 3, 10, 18, 0, tzinfo=UTC)
    with engine.begin() as connection:
        item = connection.execute(
            text(
                "INSERT INTO inbox_item (source, kind, key, payload, status, received_at, "
                "last_seen_at, webhook_count, poll_count, attempts) VALUES ('webhook', "
                "'accounts.transfer', 'k', '{}', 'processed', :at, :at, 1, 0, 0) RETURNING id"
            ),
            {"at": created},
        ).scalar_one()
        for reference, e2e in (("scheduled", SCHEDULED_E2E), ("at-once", PAYOUT_E2E)):
            connection.execute(
                text(
                    "INSERT INTO account_movement (type, reference, end_to_end_id, status, "
                    "amount_cents, refunded_cents, rank, inbox_item_id, updated_at, "
                    "provider_created_at, confirmation, check_attempts) VALUES ('TRANSFER', "
                    ":reference, :e2e, 'LIQUIDATED', 100, 0, 2000, :item, :at, :at, "
                    "'confirmed', 0)"
                ),
                {"reference": reference, "e2e": e2e, "item": item, "at": created},
            )
    upgrade(engine)
    with session_scope(engine) as session:
        rows = session.execute(
            select(AccountMovement.reference, AccountMovement.moved_at)  # type: ignore[call-overload]
        ).all()
    engine.dispose()
    moved = {reference: as_utc(at) if at else None for reference, at in rows}
    assert moved == {"scheduled": datetime(2026, 3, 12, 12, 0, tzinfo=UTC), "at-once": None}
