"""Scenario days played end to end and judged: the sandbox plays the day against a
running receiver, the workers' jobs poll and confirm, and the nightly run's verdicts, its
bridge and the day's verdict must agree with the scenario's ground truth — on SQLite and
PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from reconcile.nightly import NightlyResult
from sandbox.scenario import ScenarioOutcome
from tests.integration.scenario_day import played
from tests.reconcile.day_book import verdicts_of

EXAMPLES = Path(__file__).parents[2] / "examples" / "scenarios"


def _play(engine: Engine, name: str) -> tuple[ScenarioOutcome, NightlyResult]:
    with played(engine, name) as day:
        day.node.wait_processed(timeout=20)
        jobs = day.node.node.runtime.jobs
        assert jobs.poll_qrcode()
        assert jobs.poll_accounts()
        day.node.wait_processed(timeout=20)
        assert jobs.confirm()
        return day.outcome, day.reconcile()


def _bridge_explains_the_day(result: NightlyResult) -> dict[str, dict[str, Any]]:
    bridge = result.report["bridge"]
    assert bridge["residual_cents"] == 0, bridge
    assert bridge["unexplained_cents"] == 0
    booked = sum(row["sign"] * row["statement_cents"] for row in bridge["categories"])
    assert bridge["opening_cents"] + booked == bridge["closing_cents"]
    return {row["category"]: row for row in bridge["categories"]}


def test_a_day_with_provider_fees_is_reconciled_fees_and_all(engine: Engine) -> None:
    outcome, result = _play(engine, "fees.json")
    rows = _bridge_explains_the_day(result)
    assert rows["fees"]["statement_cents"] == outcome.totals.fees_cents > 0
    assert rows["pix_received"]["difference_cents"] == 0
    assert rows["refunds_sent"]["difference_cents"] == 0
    assert rows["payouts"]["difference_cents"] == 0
    assert result.report["balance"]["closing_cents"] == outcome.closing_balance_cents
    assert result.verdict.value == "reconciled", result.report["exceptions"]
    assert result.exit_code == 0


def test_due_date_charges_are_judged_on_what_was_due_the_day_they_were_paid(
    engine: Engine,
) -> None:
    outcome, result = _play(engine, "due-date-charges.json")
    verdicts = verdicts_of(engine, result)
    for payment in outcome.payments:
        verdict = verdicts[("charge", f"{payment.kind}:{payment.txid}")]
        assert verdict.status == payment.outcome, payment.ref
        if payment.paid_cents:
            assert verdict.expected_cents == payment.due_cents, payment.ref
    _bridge_explains_the_day(result)
    # The short payment is an exception: the day breaks.
    assert result.verdict.value == "breaks"
    assert result.exit_code == 1
