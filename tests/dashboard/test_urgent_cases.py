"""Priority 1 is the work that cannot wait — money near its last day to be refunded, an
open MED case near its analysis deadline — and the dashboard says so in words, as the
command line marks it with ``!``, rather than leaving a ``1`` to be told from a ``2``."""

from __future__ import annotations

import html
import re
from datetime import timedelta

from sqlalchemy import Engine

from reconcile.nightly import reconcile_day
from reconcile.timeutil import business_day_bounds, business_today
from tests.conftest import RunningNode
from tests.dashboard.support import figures, sign_in
from tests.reconcile.day_book import DayBook


def _case(book: DayBook, case_id: str, deadline_in_days: int) -> dict[str, object]:
    deadline = business_day_bounds(business_today() + timedelta(days=deadline_in_days))[0]
    return {
        "id": case_id,
        "status": "OPEN",
        "amount": "20.00",
        "createdAt": book.at("12:00").isoformat(),
        "analysisDeadline": (deadline + timedelta(hours=15)).isoformat(),
    }


def test_an_open_med_case_near_its_deadline_is_shown_as_urgent(
    engine: Engine, dashboard_node: RunningNode
) -> None:
    yesterday = business_today() - timedelta(days=1)
    book = DayBook(engine, yesterday)
    book.infraction(_case(book, "med-near", 1))
    book.infraction(_case(book, "med-far", 6))
    result = reconcile_day(engine, yesterday, now=business_day_bounds(yesterday)[1])
    cases = {e["ref"]: e for e in result.report["exceptions"]}
    assert (cases["med-near"]["priority"], cases["med-far"]["priority"]) == (1, 2)

    client = sign_in(dashboard_node.url)
    listed = client.get("/dashboard/exceptions")
    assert listed.status_code == 200
    rows = {
        ref: html.unescape(row)
        for row in re.findall(r"<tr data-case=.*?</tr>", listed.text, re.S)
        for ref in ("med-near", "med-far")
        if f">{ref}<" in row
    }
    assert "urgent" in rows["med-near"]
    assert "urgent" not in rows["med-far"]

    near = client.get(f"/dashboard/exceptions/{cases['med-near']['case_id']}").text
    far = client.get(f"/dashboard/exceptions/{cases['med-far']['case_id']}").text
    assert figures(near)["case.priority"].strip() == "1"
    assert "urgent" in html.unescape(near)
    # The deadline as a field of its own, where money's last day to be refunded is shown.
    due = business_today() + timedelta(days=1)
    assert figures(near)["case.med_deadline"].strip() == f"{due:%d/%m/%Y} 15:00"
    assert figures(far)["case.priority"].strip() == "2"
    assert "urgent" not in html.unescape(far)
    # First seen yesterday: one day, not "1 days".
    assert "(1 day ago)" in html.unescape(near)

    # The day's MED table flags the same case, as of today, and only that one.
    day = html.unescape(client.get(f"/dashboard/?date={yesterday.isoformat()}").text)
    med_rows = {
        ref: row
        for row in re.findall(r"<tr><td><code>.*?</tr>", day, re.S)
        for ref in ("med-near", "med-far")
        if f">{ref}<" in row
    }
    assert set(med_rows) == {"med-near", "med-far"}
    assert "urgent" in med_rows["med-near"]
    assert "urgent" not in med_rows["med-far"]
