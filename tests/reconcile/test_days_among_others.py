"""A day reconciled among the days the tables keep: the run reads the day's charges and
the day's inbox items, not every row of every day, and what concerns the day from an
earlier one (a charge created before and paid today, a Pix of the day before booked
today) is still found. On SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import date, timedelta

from sqlalchemy import Engine, select
from sqlmodel import col

from reconcile.db import session_scope
from reconcile.models import InboxItem
from reconcile.nightly import reconcile_day
from reconcile.timeutil import business_day_bounds
from tests.reconcile.day_book import DayBook, verdicts_of

PAST = date(2026, 3, 10)
AFTER = business_day_bounds(PAST)[1] + timedelta(hours=2)
# A day's txids, 26 to 35 characters as the BCB API requires.
OLDER = "cobcreatedthedaybefore00000001"
DONE = "cobpaidthedaybefore00000000001"
TWICE = "cobpaidonbothdays0000000000001"
LATER = "cobcreatedtodaypaidtomorrow001"


def test_a_charge_is_judged_on_each_day_that_concerns_it_as_of_that_day_s_end(
    engine: Engine,
) -> None:
    before = DayBook(engine, PAST - timedelta(days=1))
    for txid, cents in ((OLDER, 4_000), (DONE, 1_500), (TWICE, 2_000)):
        before.charge("cob", txid, cents, "10:00", expiracao=2 * 86_400)
    before.pix(1_500, "11:00", txid=DONE)
    first = before.pix(2_000, "11:00", txid=TWICE)

    book = DayBook(engine, PAST, before.balance)
    paid = book.pix(4_000, "09:00", txid=OLDER)
    second = book.pix(2_000, "09:30", txid=TWICE)
    book.charge("cob", LATER, 3_000, "18:00", expiracao=2 * 86_400)
    book.confirm_all_pix()
    verdicts = verdicts_of(engine, reconcile_day(engine, PAST, now=AFTER))

    # Pix of the day after, and the day is run again: its answer stays the same.
    after = DayBook(engine, PAST + timedelta(days=1), book.balance)
    after.pix(2_000, "08:00", txid=TWICE)
    after.pix(3_000, "08:00", txid=LATER)
    refund = {
        "id": "devolucao-1",
        "rtrId": "D99999999202603111000abcdefghij1",
        "valor": "40.00",
        "status": "DEVOLVIDO",
        "horario": {
            "solicitacao": after.at("09:00").isoformat(),
            "liquidacao": after.at("09:00").isoformat(),
        },
    }
    # The Pix that paid a charge today, refunded in full tomorrow.
    after.pix(4_000, "09:00", e2e=paid, txid=OLDER, refunds=[refund])
    after.confirm_all_pix()
    again = verdicts_of(engine, reconcile_day(engine, PAST, now=AFTER + timedelta(days=2)))
    assert {ref: (v.status, v.actual_cents, v.net_cents) for ref, v in again.items()} == {
        ref: (v.status, v.actual_cents, v.net_cents) for ref, v in verdicts.items()
    }
    assert verdicts[("movement", paid)].net_cents == 4_000
    later = verdicts[("charge", "cob:" + LATER)]
    assert (later.status, later.actual_cents) == ("unpaid", None)
    next_day = verdicts_of(
        engine, reconcile_day(engine, PAST + timedelta(days=1), now=AFTER + timedelta(days=2))
    )
    assert next_day[("charge", "cob:" + LATER)].status == "paid"

    older = verdicts[("charge", "cob:" + OLDER)]
    assert (older.status, older.actual_cents, older.expected_cents) == ("paid", 4_000, 4_000)
    # Paid on both days: the day's run counts the Pix of the day and of the days before.
    twice = verdicts[("charge", "cob:" + TWICE)]
    assert (twice.status, twice.exception, twice.actual_cents) == ("paid_twice", True, 4_000)
    # Created and paid the day before: nothing of it happened today.
    assert ("charge", "cob:" + DONE) not in verdicts
    assert {ref for (subject, ref) in verdicts if subject == "movement"} == {paid, second}
    assert ("movement", first) not in verdicts


def test_a_line_booked_today_for_a_pix_of_the_day_before_keeps_that_pix_s_item(
    engine: Engine,
) -> None:
    before = DayBook(engine, PAST - timedelta(days=1))
    late = before.pix(7_000, "23:59:30")
    before.confirm_all_pix()
    book = DayBook(engine, PAST, before.balance)
    book.line("PIX_RECEIVED", 7_000, "00:00:30", credit=True, endToEndId=late)
    # A Pix of the day, notified only: its own item, however many earlier ones there are.
    today = book.pix(3_000, "10:00", polled=False)
    book.confirm_all_pix()

    verdicts = verdicts_of(engine, reconcile_day(engine, PAST, now=AFTER))
    with session_scope(engine) as session:
        found = session.execute(
            select(col(InboxItem.key), col(InboxItem.id)).where(
                col(InboxItem.key).in_(("pix:" + late, "pix:" + today))
            )
        )
        items: dict[str, int | None] = {key: id_ for key, id_ in found}
    carried = verdicts[("movement", late)]
    assert (carried.status, carried.carried, carried.source) == ("matched", "in", "both")
    assert carried.inbox_item_id == items["pix:" + late]
    own = verdicts[("movement", today)]
    assert (own.source, own.inbox_item_id) == ("webhook", items["pix:" + today])


def test_a_line_nobody_notified_is_the_day_s_exception_not_carried_in(engine: Engine) -> None:
    book = DayBook(engine, PAST)
    known = book.pix(2_000, "10:00")
    book.confirm_all_pix()
    # Booked just after midnight, like a carried-in line, but no Pix of the day before
    # explains it.
    unknown = "E99999999202603100000abcdefgh999"
    book.line("PIX_RECEIVED", 3_000, "00:01", credit=True, endToEndId=unknown)
    book.line("PIX_RECEIVED", 2_000, "10:01", credit=True, endToEndId=known)
    result = reconcile_day(engine, PAST, now=AFTER)

    verdict = verdicts_of(engine, result)[("movement", unknown)]
    assert (verdict.status, verdict.exception, verdict.carried) == ("missing_webhook", True, None)
    assert result.summary["carried_in"] == []
    received = next(
        row for row in result.summary["bridge"]["categories"] if row["category"] == "pix_received"
    )
    assert (received["carried_in_cents"], received["difference_cents"]) == (0, 3_000)
