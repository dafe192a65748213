"""The exceptions people work from judge money's last day to be refunded as of today, not
as of the day that raised it: a Pix nobody notified, booked on a day long past, comes first
and is to be paid back with a new Pix once its 90 days are over."""

from __future__ import annotations

import html
from datetime import date, timedelta

from sqlalchemy import Engine

from reconcile.nightly import reconcile_day
from reconcile.timeutil import business_day_bounds
from tests.conftest import RunningNode
from tests.dashboard.support import figures, sign_in
from tests.reconcile.day_book import DayBook

# More than 90 days before any day this test runs on.
PAST = date(2026, 3, 10)
AFTER = business_day_bounds(PAST)[1] + timedelta(hours=2)


def test_a_refund_deadline_past_puts_the_case_first_and_says_so(
    engine: Engine, dashboard_node: RunningNode
) -> None:
    book = DayBook(engine, PAST)
    unbooked = book.pix(9_000, "11:00")
    book.confirm_all_pix()
    unnotified = "E99999999202603101200nobodysaid01"
    book.line("PIX_RECEIVED", 3_000, "12:00", credit=True, endToEndId=unnotified)
    result = reconcile_day(engine, PAST, now=AFTER)
    reported = {e["ref"]: e for e in result.report["exceptions"]}
    # As the day ended, both were priority 2, and the larger amount would be listed first.
    assert (reported[unnotified]["priority"], reported[unbooked]["priority"]) == (2, 2)

    client = sign_in(dashboard_node.url)
    listed = client.get("/dashboard/exceptions")
    assert listed.status_code == 200
    text = html.unescape(listed.text)
    assert text.index(unnotified) < text.index(unbooked)
    passed = "pay it back to the payer with a new Pix: the time to refund it ended on 08/06/2026"
    assert passed in text

    case_id = reported[unnotified]["case_id"]
    page = client.get(f"/dashboard/exceptions/{case_id}")
    shown = {key: html.unescape(value).strip() for key, value in figures(page.text).items()}
    assert shown["case.priority"] == "1"
    assert shown["case.refund_by"] == "08/06/2026 — passed"
    assert shown["case.action"].endswith(passed)
