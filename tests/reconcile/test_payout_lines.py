"""A payout's statement debit (``PIX_PAYMENT``) names the payout by its idempotencyKey, by
its endToEndId, or both: whichever it carries, it is matched to the payout notified with
it, and a debit no payout explains is that payout's exception. On SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, update

from reconcile.cases import case_rows
from reconcile.db import session_scope
from reconcile.matching.judgement import DayVerdict
from reconcile.models import AccountMovement, Confirmation
from reconcile.nightly import NightlyResult, reconcile_day
from reconcile.timeutil import business_day_bounds
from tests.reconcile.day_book import DayBook, verdicts_of

PAST = date(2026, 3, 10)
AFTER = business_day_bounds(PAST)[1] + timedelta(hours=2)
KEY = "po-supplier-0310"
PAYOUT_E2E = "E11111111202603101000abcdefghij1"


def _confirm(engine: Engine) -> None:
    with session_scope(engine) as session:
        session.execute(
            update(AccountMovement)
            .where(AccountMovement.confirmation == Confirmation.PENDING.value)  # type: ignore[arg-type]
            .values(confirmation=Confirmation.CONFIRMED.value)
        )


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
    _confirm(engine)
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
