"""Money received that may have to go back carries the last day it can be refunded, and
comes first when that day is near: a Pix booked in the statement that nobody notified, the
API denies or states another amount for. On SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import date, timedelta

from sqlalchemy import Engine

from reconcile.cases import case_rows
from reconcile.db import session_scope
from reconcile.matching.context import Judging
from reconcile.nightly import reconcile_day
from reconcile.timeutil import business_day_bounds
from tests.reconcile.day_book import DayBook, verdicts_of

PAST = date(2026, 3, 10)
AFTER = business_day_bounds(PAST)[1] + timedelta(hours=2)


def _day(engine: Engine) -> dict[str, str]:
    book = DayBook(engine, PAST)
    agreed = book.pix(1_000, "09:00")
    # An endToEndId in lower case is still a Pix received, its money still refundable.
    lower = book.pix(2_000, "10:00", e2e="e99999999202603101300lowercase01")
    unbooked = book.pix(4_000, "11:00")
    inflated = book.pix(5_000, "11:30")
    book.confirm_all_pix()
    book.line("PIX_RECEIVED", 1_000, "09:01", credit=True, endToEndId=agreed)
    book.line("PIX_RECEIVED", 2_500, "10:01", credit=True, endToEndId=lower)
    book.line("PIX_RECEIVED", 4_000, "11:31", credit=True, endToEndId=inflated)
    unknown = "E99999999202603101200nobodysaid01"
    book.line("PIX_RECEIVED", 3_000, "12:00", credit=True, endToEndId=unknown)
    return {
        "agreed": agreed,
        "lower": lower,
        "unknown": unknown,
        "unbooked": unbooked,
        "inflated": inflated,
    }


def test_booked_money_that_may_go_back_carries_its_refund_deadline(engine: Engine) -> None:
    refs = _day(engine)
    verdicts = verdicts_of(engine, reconcile_day(engine, PAST, now=AFTER))
    shown = {
        name: (
            verdicts[("movement", ref)].status,
            verdicts[("movement", ref)].refund_by,
            verdicts[("movement", ref)].priority,
        )
        for name, ref in refs.items()
    }
    last_day = PAST + timedelta(days=90)
    assert shown == {
        "agreed": ("matched", None, None),
        "lower": ("amount_mismatch", last_day, 2),
        "unknown": ("missing_webhook", last_day, 2),
        # Never booked: no money of the merchant's to return; a person looks all the same.
        "unbooked": ("status_mismatch", None, 2),
        # Notified for more than arrived: nothing arrived over what was said, to give back.
        "inflated": ("amount_mismatch", None, 2),
    }


def test_a_refund_deadline_near_puts_the_money_first(engine: Engine) -> None:
    refs = _day(engine)
    judging = Judging(refund_days=5, refund_warning_days=10)
    verdicts = verdicts_of(engine, reconcile_day(engine, PAST, now=AFTER, judging=judging))
    for name in ("lower", "unknown"):
        row = verdicts[("movement", refs[name])]
        assert (row.refund_by, row.priority) == (PAST + timedelta(days=5), 1), name
    assert verdicts[("movement", refs["unbooked"])].priority == 2


def _work_queue(engine: Engine, today: date | None) -> dict[str, tuple[int | None, str]]:
    with session_scope(engine) as session:
        rows = case_rows(session, day=PAST, as_of=today, by_priority=True)
    return {row["ref"]: (row["priority"], row["action"]) for row in rows}


def test_the_work_queue_judges_the_deadline_as_of_today(engine: Engine) -> None:
    """The day's report judges as of the day's end; the list a person works from judges
    as of today: money left unrefunded comes first as its last day nears, and once that
    day is past it can only be paid back."""
    refs = _day(engine)
    reconcile_day(engine, PAST, now=AFTER)
    last_day = PAST + timedelta(days=90)
    before, passed = "before 08/06/2026", "the time to refund it ended on 08/06/2026"
    refundable = (refs["lower"], refs["unknown"])

    as_reported = _work_queue(engine, None)
    assert {ref: as_reported[ref][0] for ref in refundable} == dict.fromkeys(refundable, 2)
    assert as_reported[refs["unknown"]][1].endswith(f"refund it {before}")

    far = _work_queue(engine, last_day - timedelta(days=11))
    assert far == as_reported

    near = _work_queue(engine, last_day - timedelta(days=10))
    assert {ref: near[ref][0] for ref in refundable} == dict.fromkeys(refundable, 1)
    assert near[refs["unbooked"]][0] == 2
    assert list(near)[:2] == sorted(refundable), "the urgent money comes first"
    assert near[refs["unknown"]][1].endswith(f"refund it {before}")

    late = _work_queue(engine, last_day + timedelta(days=1))
    assert {ref: late[ref][0] for ref in refundable} == dict.fromkeys(refundable, 1)
    assert late[refs["unknown"]][1] == (
        "a payment of R$ 30,00 nobody notified: match it to an order, or pay it back to the "
        f"payer with a new Pix: {passed}"
    )
    # An amount the API disputes is asked about first, deadline or not.
    assert late[refs["lower"]][1] == as_reported[refs["lower"]][1]
    assert _work_queue(engine, last_day)[refs["unknown"]][1].endswith(f"refund it {before}")


def test_a_charge_paid_twice_is_refunded_by_the_second_payments_deadline(engine: Engine) -> None:
    """Paid on 08/03 and again on 10/03: the money to give back is the second Pix's, which
    can be refunded until 90 days after it, not after the first."""
    txid = "cobpaidtwiceacrossdays0000001"
    first = DayBook(engine, PAST - timedelta(days=2))
    first.charge("cob", txid, 5_000, "09:00", expiracao=7 * 86_400)
    first.pix(5_000, "10:00", txid=txid, webhook=False)
    book = DayBook(engine, PAST, first.balance)
    again = book.pix(5_000, "10:00", txid=txid, webhook=False)
    book.line("PIX_RECEIVED", 5_000, "10:00", credit=True, endToEndId=again)
    # A third payment, on a later day, is no part of this day's answer.
    DayBook(engine, PAST + timedelta(days=1)).pix(5_000, "10:00", txid=txid, webhook=False)

    verdict = verdicts_of(engine, reconcile_day(engine, PAST, now=AFTER))[("charge", f"cob:{txid}")]
    assert (verdict.status, verdict.refund_by) == ("paid_twice", PAST + timedelta(days=90))


def test_a_charge_paid_in_two_parts_that_make_what_was_due_has_nothing_to_refund_by(
    engine: Engine,
) -> None:
    """R$ 30,00 then R$ 10,00 on a R$ 40,00 charge: paid twice, nothing paid over, so no
    refund deadline and no refund priority."""
    txid = "cobpaidinpartsnothingover00001"
    book = DayBook(engine, PAST)
    book.charge("cob", txid, 4_000, "09:00", expiracao=86_400)
    for cents, clock in ((3_000, "10:00"), (1_000, "11:00")):
        e2e = book.pix(cents, clock, txid=txid, webhook=False)
        book.line("PIX_RECEIVED", cents, clock, credit=True, endToEndId=e2e)
    verdict = verdicts_of(engine, reconcile_day(engine, PAST, now=AFTER))[("charge", f"cob:{txid}")]
    assert (verdict.status, verdict.actual_cents, verdict.expected_cents) == (
        "paid_twice",
        4_000,
        4_000,
    )
    assert verdict.refund_by is None
