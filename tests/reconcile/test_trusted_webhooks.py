"""With ``PIXRECON_CONFIRM_POLICY=none`` notified money counts without a look-up, by the
merchant's choice, but the bridge's API column still says only what the provider's API
stood behind: a Pix it listed when polled, never one only a webhook announced."""

from __future__ import annotations

from datetime import date, timedelta

from sqlalchemy import Engine

from reconcile.confirmation import waive_confirmation
from reconcile.matching.judgement import Sources
from reconcile.nightly import reconcile_day
from reconcile.timeutil import business_day_bounds
from tests.reconcile.day_book import DayBook, verdicts_of

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
