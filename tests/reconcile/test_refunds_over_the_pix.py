"""Refunds of one Pix that add up to more than it, the excess going out on a later day: the
day the money went out is no "all reconciled" (docs/design.md §5), and the Pix's own day
answers as it did. Each day is written through the real inbox and handlers, on SQLite and
PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine

from reconcile.matching.judgement import DayVerdict
from reconcile.nightly import reconcile_day
from reconcile.timeutil import business_day_bounds
from tests.reconcile.day_book import DayBook, reais, verdicts_of
from tests.reconcile.test_day_verdict import AFTER, PAST, _clean_day

NEXT = PAST + timedelta(days=1)
NEXT_AFTER = business_day_bounds(NEXT)[1] + timedelta(hours=2)
FIRST_RTR, SECOND_RTR = "D18236120202603101300first000001", "D18236120202603111200second00001"


def _refund(book: DayBook, rtr: str, cents: int, clock: str) -> dict[str, Any]:
    made = book.at(clock).isoformat()
    return {
        "id": rtr[-6:],
        "rtrId": rtr,
        "valor": reais(cents),
        "natureza": "ORIGINAL",
        "status": "DEVOLVIDO",
        "horario": {"solicitacao": made, "liquidacao": made},
    }


@pytest.mark.parametrize(("second_cents", "over"), [(6_000, True), (4_000, False)])
def test_a_refund_that_takes_an_earlier_pix_over_its_value_is_its_days_exception(
    engine: Engine, second_cents: int, over: bool
) -> None:
    """R$ 100,00 received, R$ 60,00 refunded the same day and R$ 60,00 (or R$ 40,00) the
    next: R$ 120,00 gone back for R$ 100,00 is the next day's exception; R$ 100,00 is not."""
    book = DayBook(engine, PAST)
    _clean_day(book)
    first = _refund(book, FIRST_RTR, 6_000, "13:00")
    e2e = book.pix(10_000, "12:30", refunds=[first])
    book.confirm_all_pix()
    book.confirm_all_refunds()
    book.line("PIX_RECEIVED", 10_000, "12:30", credit=True, endToEndId=e2e)
    book.line("PIX_REFUND_SENT", 6_000, "13:00", credit=False, endToEndId=FIRST_RTR)
    own_day = reconcile_day(engine, PAST, now=AFTER)
    assert own_day.verdict is DayVerdict.RECONCILED, own_day.report

    next_day = book.next_day()
    second = _refund(next_day, SECOND_RTR, second_cents, "12:00")
    # The API's listing of the Pix, with both of its refunds.
    book.pix(10_000, "12:30", e2e=e2e, refunds=[first, second], webhook=False)
    next_day.confirm_all_refunds()
    next_day.line("PIX_REFUND_SENT", second_cents, "12:00", credit=False, endToEndId=SECOND_RTR)

    later = reconcile_day(engine, NEXT, now=NEXT_AFTER)
    row = verdicts_of(engine, later)[("movement", SECOND_RTR)]
    if over:
        assert (row.status, row.exception) == ("amount_mismatch", True)
        assert "exceed the Pix they refund" in (row.reason or "")
        (case,) = [e for e in later.report["exceptions"] if e["ref"] == SECOND_RTR]
        assert "the refunds of its Pix exceed what the Pix received" in case["action"]
        assert later.verdict is DayVerdict.BREAKS
        assert later.exit_code == 1
    else:
        assert (row.status, row.exception) == ("missing_webhook", False)
        assert later.verdict is DayVerdict.RECONCILED, later.report
    # The Pix's own day stood at R$ 60,00 refunded: asked again, it says the same.
    again = reconcile_day(engine, PAST, now=NEXT_AFTER)
    assert again.verdict is DayVerdict.RECONCILED, again.report
    assert verdicts_of(engine, again)[("movement", e2e)].net_cents == 4_000
