"""Money received that may have to go back carries the last day it can be refunded, and
comes first when that day is near: a Pix booked in the statement that nobody notified, the
API denies or states another amount for. On SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import date, timedelta

from sqlalchemy import Engine

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
    book.confirm_all_pix()
    book.line("PIX_RECEIVED", 1_000, "09:01", credit=True, endToEndId=agreed)
    book.line("PIX_RECEIVED", 2_500, "10:01", credit=True, endToEndId=lower)
    unknown = "E99999999202603101200nobodysaid01"
    book.line("PIX_RECEIVED", 3_000, "12:00", credit=True, endToEndId=unknown)
    return {"agreed": agreed, "lower": lower, "unknown": unknown, "unbooked": unbooked}


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
    }


def test_a_refund_deadline_near_puts_the_money_first(engine: Engine) -> None:
    refs = _day(engine)
    judging = Judging(refund_days=5, refund_warning_days=10)
    verdicts = verdicts_of(engine, reconcile_day(engine, PAST, now=AFTER, judging=judging))
    for name in ("lower", "unknown"):
        row = verdicts[("movement", refs[name])]
        assert (row.refund_by, row.priority) == (PAST + timedelta(days=5), 1), name
    assert verdicts[("movement", refs["unbooked"])].priority == 2
