"""A missed recurrence cycle is decided by the provider's API (the recurrence approved)
and by the charge nobody created, never by a notification: its page says so, and a
cancellation the API denied is shown only as an item carrying the recurrence's id."""

from __future__ import annotations

import html
import re

from sqlalchemy import Engine

from reconcile.nightly import reconcile_day
from tests.conftest import RunningNode
from tests.dashboard.support import figures, sign_in
from tests.reconcile.test_automatico_claims import (
    AFTER,
    PAST,
    REC,
    Api,
    _look_up,
    _notified,
    _polled,
    _quiet_day,
    _rec,
)


def test_a_missed_cycle_names_the_apis_state_not_the_denied_notification(
    engine: Engine, dashboard_node: RunningNode
) -> None:
    book = _quiet_day(engine)
    api = Api()
    api.recs[REC] = _rec(book)
    _polled(engine, rec=api.recs[REC])
    _notified(engine, rec=_rec(book, "CANCELADA", CANCELADA="06:30"))
    _look_up(engine, api)
    result = reconcile_day(engine, PAST, now=AFTER)
    (case,) = [c for c in result.report["exceptions"] if c["status"] == "missed_cycle"]

    page = html.unescape(
        sign_in(dashboard_node.url).get(f"/dashboard/exceptions/{case['case_id']}").text
    )
    decided = page.split("<h2>What decided it</h2>", 1)[1]
    assert "decided the verdict" not in decided
    assert "approved by the payer (APROVADA) as the provider's API states it" in decided
    assert figures(page)["cycle.due"].strip() == "weekly cycle due 10/03/2026"
    assert "none due within the cycle" in decided
    # The denied cancellation is still there to look at, as an item and no more.
    assert re.search(r"Inbox item #\d+ </h3>", decided), decided
