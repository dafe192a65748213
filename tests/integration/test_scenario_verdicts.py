"""Scenario days played end to end and judged: the sandbox plays the day against a
running receiver, the workers' jobs poll and confirm, and the nightly run's verdicts, its
bridge and the day's verdict must agree with the scenario's ground truth — on SQLite and
PostgreSQL. Every day is then judged again a month later: the report must not change."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import Engine

from reconcile.models import ReconciliationItem
from reconcile.nightly import NightlyResult
from sandbox.scenario import ScenarioOutcome
from tests.integration.scenario_day import PlayedDay, played
from tests.reconcile.day_book import verdicts_of

Verdicts = dict[tuple[str, str], ReconciliationItem]


def _judged(day: PlayedDay) -> NightlyResult:
    day.node.wait_processed(timeout=20)
    jobs = day.node.node.runtime.jobs
    assert jobs.poll_qrcode()
    assert jobs.poll_accounts()
    day.node.wait_processed(timeout=20)
    assert jobs.confirm()
    return day.reconcile()


def _comparable(report: dict[str, Any]) -> dict[str, Any]:
    """The report less what names the run itself."""
    return {key: value for key, value in report.items() if key != "run_id"}


def _judged_again_later(day: PlayedDay, first: NightlyResult) -> None:
    """Re-running the day, now and with the clock a month on, says the same thing."""
    for later in (timedelta(0), timedelta(days=31)):
        again = day.reconcile(now=day.node_now() + later)
        assert again.run_id != first.run_id
        assert _comparable(again.report) == _comparable(first.report), later


def _bridge_explains_the_day(result: NightlyResult) -> dict[str, dict[str, Any]]:
    bridge = result.report["bridge"]
    assert bridge["residual_cents"] == 0, bridge
    assert bridge["unexplained_cents"] == 0
    booked = sum(row["sign"] * row["statement_cents"] for row in bridge["categories"])
    assert bridge["opening_cents"] + booked == bridge["closing_cents"]
    return {row["category"]: row for row in bridge["categories"]}


def _movement(outcome: ScenarioOutcome, ref: str) -> Any:
    return next(m for m in outcome.movements if m.ref == ref)


def _status(verdicts: Verdicts, subject: str, ref: str) -> tuple[str, bool]:
    row = verdicts[(subject, ref)]
    return row.status, row.exception


def test_a_day_with_provider_fees_is_reconciled_fees_and_all(engine: Engine) -> None:
    with played(engine, "fees.json") as day:
        result = _judged(day)
        rows = _bridge_explains_the_day(result)
        assert rows["fees"]["statement_cents"] == day.outcome.totals.fees_cents > 0
        for category in ("pix_received", "refunds_sent", "payouts"):
            assert rows[category]["difference_cents"] == 0
        assert result.report["balance"]["closing_cents"] == day.outcome.closing_balance_cents
        assert result.verdict.value == "reconciled", result.report["exceptions"]
        assert result.exit_code == 0
        _judged_again_later(day, result)


def test_due_date_charges_are_judged_on_what_was_due_the_day_they_were_paid(
    engine: Engine,
) -> None:
    with played(engine, "due-date-charges.json") as day:
        result = _judged(day)
        verdicts = verdicts_of(engine, result)
        for payment in day.outcome.payments:
            verdict = verdicts[("charge", f"{payment.kind}:{payment.txid}")]
            assert verdict.status == payment.outcome, payment.ref
            if payment.paid_cents:
                assert verdict.expected_cents == payment.due_cents, payment.ref
        _bridge_explains_the_day(result)
        # The short payment is an exception: the day breaks.
        assert result.verdict.value == "breaks"
        assert result.exit_code == 1
        _judged_again_later(day, result)


def test_refunds_notified_polled_refused_and_med_returns(engine: Engine) -> None:
    with played(engine, "refunds.json") as day:
        result = _judged(day)
        outcome, verdicts = day.outcome, verdicts_of(engine, result)
        status = {
            ref: _status(verdicts, "movement", _movement(outcome, ref).key)
            for ref in ("refund-shoes", "refund-bag", "refund-hat", "refund-coat", "refund-belt")
        }
        assert status["refund-shoes"] == ("matched", False)
        assert status["refund-belt"] == ("matched", False)
        assert status["refund-coat"] == ("matched", False)
        # Found only by polling: the API stands behind it, no webhook ever told.
        assert status["refund-bag"][0] == "missing_webhook"
        refused = verdicts[("movement", _movement(outcome, "refund-hat").key)]
        assert "no money" in refused.reason
        # Each Pix carries its net amount: value less its settled refunds.
        shoes = verdicts[("movement", _movement(outcome, "pix-shoes").key)]
        assert shoes.net_cents == 15_000
        hat = verdicts[("movement", _movement(outcome, "pix-hat").key)]
        assert hat.net_cents == 6_000
        rows = _bridge_explains_the_day(result)
        # The merchant's own refunds and the MED return are apart.
        assert rows["refunds_sent"]["api_cents"] == 5_000 + 8_000 + 3_000
        assert rows["refunds_sent"]["statement_cents"] == 5_000 + 8_000 + 3_000
        assert rows["med_debits"]["statement_cents"] == 12_000
        assert result.report["balance"]["closing_cents"] == outcome.closing_balance_cents
        assert result.verdict.value == "reconciled", result.report["exceptions"]
        assert result.exit_code == 0
        _judged_again_later(day, result)
