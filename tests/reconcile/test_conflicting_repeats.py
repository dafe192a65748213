"""A notification repeated under its key with other money is its day's exception: the
day the repeat came is never ``reconciled`` (docs/design.md §5), and a day asked again
after a later repeat answers as it did. Identical repeats change nothing. On SQLite and
PostgreSQL, through the real inbox and handlers (``DayBook``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, select
from sqlmodel import col

from reconcile.cases import case_rows
from reconcile.db import session_scope
from reconcile.exports.exceptions import exception_table
from reconcile.exports.movements import movement_table
from reconcile.inbox import (
    CONFLICTING_REPEAT,
    Delivery,
    NewItem,
    commit_deliveries,
    store_deliveries,
    store_items,
)
from reconcile.matching.judgement import DayVerdict, Sources
from reconcile.models import InboxItem, Source
from reconcile.nightly import reconcile_day
from reconcile.payloads.accounts import accounts_items
from reconcile.payloads.pix import PixItem, pix_items
from reconcile.timeutil import as_utc, business_day_bounds
from tests.reconcile.day_book import DayBook, reais, verdicts_of

PAST = date(2026, 3, 10)
NEXT = PAST + timedelta(days=1)
AFTER = business_day_bounds(PAST)[1] + timedelta(hours=2)
AFTER_NEXT = business_day_bounds(NEXT)[1] + timedelta(hours=2)


def _day(book: DayBook) -> str:
    """A Pix of R$ 150,00 notified, confirmed and booked: a reconciled day."""
    e2e = book.pix(15_000, "10:00")
    book.confirm_all_pix()
    book.line("PIX_RECEIVED", 15_000, "10:00", credit=True, endToEndId=e2e)
    return e2e


def _notify_again(book: DayBook, e2e: str, valor: str, received: datetime) -> None:
    raw: dict[str, Any] = {"endToEndId": e2e, "valor": valor, "horario": book.at("10:00")}
    raw["horario"] = raw["horario"].isoformat()
    with session_scope(book.engine) as session:
        store_items(
            session,
            pix_items(PixItem.model_validate(raw), raw),
            source=Source.WEBHOOK,
            now=received,
        )


def _item(engine: Engine, key: str) -> InboxItem:
    with session_scope(engine) as session:
        found: InboxItem = session.execute(
            select(InboxItem).where(col(InboxItem.key) == key)
        ).scalar_one()
        return found


def test_a_day_with_a_repeat_stating_other_money_breaks(engine: Engine) -> None:
    book = DayBook(engine, PAST)
    e2e = _day(book)
    assert reconcile_day(engine, PAST, now=AFTER).verdict is DayVerdict.RECONCILED
    _notify_again(book, e2e, "500.00", received=book.at("15:00"))
    item = _item(engine, f"pix:{e2e}")
    assert item.conflicted_at is not None
    assert item.conflict_amount_cents == 50_000

    result = reconcile_day(engine, PAST, now=AFTER)
    assert result.verdict is DayVerdict.BREAKS, result.report
    assert result.exit_code == 1
    repeat = verdicts_of(engine, result)[("movement", f"repeat:pix:{e2e}")]
    assert (repeat.status, repeat.exception) == ("amount_mismatch", True)
    assert (repeat.expected_cents, repeat.actual_cents) == (15_000, None)
    assert "R$ 150,00 then R$ 500,00" in repeat.reason
    assert "possible forgery" in repeat.reason
    assert repeat.inbox_item_id == item.id
    # The money counts as the API states it: the Pix itself still agrees.
    assert verdicts_of(engine, result)[("movement", e2e)].status == "matched"
    assert result.report["counts"]["amount_mismatch"] == 1
    with session_scope(engine) as session:
        (case,) = case_rows(session, day=PAST)
    assert case["ref"] == f"repeat:pix:{e2e}"
    assert case["end_to_end_id"] == e2e
    assert case["action"].startswith(
        "count the R$ 150,00 only as the provider's API states it: a later notification "
        "under the same key stated other money"
    )
    (exported,) = list(exception_table(engine, PAST).rows)
    assert (exported["expected_cents"], exported["actual_cents"]) == (15_000, None)


def test_a_repeat_after_the_days_end_is_the_later_days_exception(engine: Engine) -> None:
    """Judged as of its end, the day answers the same when asked after the repeat came;
    the day the repeat came shows it."""
    book = DayBook(engine, PAST)
    e2e = _day(book)
    before = reconcile_day(engine, PAST, now=AFTER)
    assert before.verdict is DayVerdict.RECONCILED
    _notify_again(book, e2e, "1.50", received=book.at("09:00", NEXT))

    again = reconcile_day(engine, PAST, now=AFTER_NEXT)
    assert again.verdict is DayVerdict.RECONCILED, again.report
    assert again.exit_code == 0
    assert not any(ref.startswith("repeat:") for _, ref in verdicts_of(engine, again))

    later = reconcile_day(engine, NEXT, now=AFTER_NEXT, sources=Sources(statement_read=True))
    assert later.verdict is DayVerdict.BREAKS, later.report
    repeat = verdicts_of(engine, later)[("movement", f"repeat:pix:{e2e}")]
    assert (repeat.expected_cents, repeat.actual_cents) == (15_000, None)


def test_a_repeat_before_the_time_a_day_is_judged_at_is_not_yet_known(engine: Engine) -> None:
    """Today's provisional run knows only what has come so far."""
    book = DayBook(engine, PAST)
    e2e = _day(book)
    _notify_again(book, e2e, "500.00", received=book.at("15:00"))
    early = reconcile_day(engine, PAST, now=book.at("14:00"))
    assert ("movement", f"repeat:pix:{e2e}") not in verdicts_of(engine, early)


def test_identical_repeats_and_another_notation_change_nothing(engine: Engine) -> None:
    book = DayBook(engine, PAST)
    e2e = _day(book)
    _notify_again(book, e2e, "150.00", received=book.at("15:00"))
    _notify_again(book, e2e, "150.0", received=book.at("16:00"))
    item = _item(engine, f"pix:{e2e}")
    assert (item.conflicted_at, item.conflict_amount_cents, item.webhook_count) == (None, None, 3)
    result = reconcile_day(engine, PAST, now=AFTER)
    assert result.verdict is DayVerdict.RECONCILED, result.report
    assert result.report["deliveries"]["duplicate_webhooks"] == 2


def test_a_payout_notified_again_for_another_payout_is_a_status_mismatch(
    engine: Engine,
) -> None:
    """The same money under the provider's id for another idempotency key: which payout it
    paid is in doubt, not how much."""
    book = DayBook(engine, PAST)
    payout = book.payout_data("po-1", 5_000, "11:00")
    book.transfer(payout)
    book.confirm_all_movements()
    book.line("PIX_PAYMENT", 5_000, "11:00", credit=False, idempotencyKey="po-1")
    assert reconcile_day(engine, PAST, now=AFTER).verdict is DayVerdict.RECONCILED
    book.transfer({**payout, "idempotencyKey": "po-9"}, received=book.at("12:00"))

    result = reconcile_day(engine, PAST, now=AFTER)
    assert result.verdict is DayVerdict.BREAKS, result.report
    key = f"accounts:TRANSFER:{payout['id']}:LIQUIDATED"
    repeat = verdicts_of(engine, result)[("movement", f"repeat:{key}")]
    assert (repeat.status, repeat.exception) == ("status_mismatch", True)
    assert (repeat.expected_cents, repeat.actual_cents) == (5_000, None)
    assert "another payout, Pix or outcome" in repeat.reason


def test_a_med_case_repeated_with_another_outcome_keeps_the_debit_it_stated(
    engine: Engine,
) -> None:
    book = DayBook(engine, PAST)
    case = {
        "id": "inf-1",
        "status": "CLOSED",
        "analysisResult": "DISAGREED",
        "amount": reais(2_000),
        "createdAt": book.at("09:00").isoformat(),
    }
    items = accounts_items({"type": "INFRACTION", "data": case})
    again = accounts_items(
        {
            "type": "INFRACTION",
            "data": {**case, "analysisResult": "AGREED", "debitedAmount": reais(1_500)},
        }
    )
    with session_scope(engine) as session:
        store_items(session, items, source=Source.WEBHOOK, now=book.at("09:00"))
        store_items(session, again, source=Source.WEBHOOK, now=book.at("13:00"))
    item = _item(engine, "accounts:INFRACTION:inf-1:CLOSED")
    assert item.conflict_amount_cents == 1_500


# Every way items are stored, each at its own time: one webhook delivery per call.
Store = Callable[[Engine, Sequence[NewItem], datetime], None]


def _by_items(engine: Engine, items: Sequence[NewItem], now: datetime) -> None:
    with session_scope(engine) as session:
        store_items(session, items, source=Source.WEBHOOK, now=now)


def _delivery(items: Sequence[NewItem]) -> Delivery:
    return Delivery("/webhooks/qrcode/pix", None, {}, b"{}", items)


def _in_session(engine: Engine, items: Sequence[NewItem], now: datetime) -> None:
    with session_scope(engine) as session:
        store_deliveries(session, [_delivery(items)], now=now)


def _committed(engine: Engine, items: Sequence[NewItem], now: datetime) -> None:
    commit_deliveries(engine, [_delivery(items)], now=now)


STORES = pytest.mark.parametrize(
    "store", [_by_items, _in_session, _committed], ids=["items", "session", "commit"]
)
KEY = "pix:E12345678202603101300abcdefghijk"
T0 = business_day_bounds(PAST)[0] + timedelta(hours=12)


def _pix(valor: str) -> NewItem:
    payload = json.dumps({"endToEndId": KEY[4:], "valor": valor})
    return NewItem(kind="pix", key=KEY, payload=payload)


def _flags(item: InboxItem) -> int:
    warnings: list[dict[str, str]] = json.loads(item.warnings or "[]")
    return warnings.count(CONFLICTING_REPEAT.as_json())


@STORES
def test_the_first_conflicting_repeat_is_kept_with_its_time_and_money(
    engine: Engine, store: Store
) -> None:
    store(engine, [_pix("10.00")], T0)
    store(engine, [_pix("10.00")], T0 + timedelta(minutes=1))
    assert _item(engine, KEY).conflicted_at is None
    store(engine, [_pix("20.00")], T0 + timedelta(minutes=2))
    store(engine, [_pix("30.00")], T0 + timedelta(minutes=3))
    item = _item(engine, KEY)
    assert item.conflicted_at is not None
    assert as_utc(item.conflicted_at) == T0 + timedelta(minutes=2)
    assert (item.conflict_amount_cents, _flags(item), item.webhook_count) == (2_000, 1, 4)


@STORES
def test_a_conflicting_copy_in_the_same_call_is_kept_too(engine: Engine, store: Store) -> None:
    store(engine, [_pix("5.00"), _pix("7.00"), _pix("9.00")], T0)
    item = _item(engine, KEY)
    assert item.conflicted_at is not None
    assert as_utc(item.conflicted_at) == T0
    assert (item.conflict_amount_cents, _flags(item)) == (700, 1)
    assert json.loads(item.payload)["valor"] == "5.00"


@STORES
def test_a_call_whose_later_copy_contradicts_a_stored_item_flags_it(
    engine: Engine, store: Store
) -> None:
    """Its first copy like the stored item, the next not: a repeat with other money all
    the same."""
    store(engine, [_pix("5.00")], T0)
    store(engine, [_pix("5.00"), _pix("8.00")], T0 + timedelta(minutes=1))
    item = _item(engine, KEY)
    assert item.conflicted_at is not None
    assert as_utc(item.conflicted_at) == T0 + timedelta(minutes=1)
    assert (item.conflict_amount_cents, _flags(item)) == (800, 1)


@STORES
def test_a_call_whose_first_copy_contradicts_a_stored_item_keeps_that_copys_money(
    engine: Engine, store: Store
) -> None:
    store(engine, [_pix("5.00")], T0)
    store(engine, [_pix("6.00"), _pix("5.00")], T0 + timedelta(minutes=1))
    item = _item(engine, KEY)
    assert (item.conflict_amount_cents, _flags(item)) == (600, 1)


def test_an_item_flagged_before_its_time_was_kept_stays_without_one(engine: Engine) -> None:
    """Flagged before migration 0033: no time, so no day's answer changes, and a later
    repeat does not give it one either (the flag is set once)."""
    _by_items(engine, [_pix("5.00")], T0)
    _by_items(engine, [_pix("6.00")], T0 + timedelta(minutes=1))
    with session_scope(engine) as session:
        item = session.execute(select(InboxItem).where(col(InboxItem.key) == KEY)).scalar_one()
        item.conflicted_at = None
        item.conflict_amount_cents = None
    _by_items(engine, [_pix("7.00")], T0 + timedelta(minutes=2))
    item = _item(engine, KEY)
    assert (item.conflicted_at, item.conflict_amount_cents, _flags(item)) == (None, None, 1)


def test_the_movements_export_names_the_pix_a_repeat_repeats(engine: Engine) -> None:
    """A finance tool looks a row up by its txid and payer: a repeat's row carries those
    of the Pix it repeats, the payer masked as on every other row."""
    book = DayBook(engine, PAST)
    e2e = book.pix(
        15_000,
        "10:00",
        txid="pedido42repeatdoexemplo0001",
        payer={"cpf": "39053344705", "nome": "Maria da Silva"},
    )
    book.confirm_all_pix()
    book.line("PIX_RECEIVED", 15_000, "10:00", credit=True, endToEndId=e2e)
    _notify_again(book, e2e, "500.00", received=book.at("15:00"))
    reconcile_day(engine, PAST, now=AFTER)

    rows = {row["ref"]: row for row in movement_table(engine, PAST).rows}
    pix, repeat = rows[e2e], rows[f"repeat:pix:{e2e}"]
    assert pix["txid"] == "pedido42repeatdoexemplo0001"
    assert (repeat["txid"], repeat["payer_document"], repeat["payer_name"]) == (
        pix["txid"],
        pix["payer_document"],
        pix["payer_name"],
    )
    assert repeat["payer_document"] == "*********05"
    assert "Maria" not in str(repeat["payer_name"])
