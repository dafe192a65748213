"""Scenario days played end to end and judged: the sandbox plays the day against a
running receiver, the workers' jobs poll and confirm, and the nightly run's verdicts, its
bridge and the day's verdict must agree with the scenario's ground truth — on SQLite and
PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select

from pixrecon.node import Node
from pixrecon.sandbox_wiring import sandbox_servers
from reconcile.db import session_scope
from reconcile.matching.context import Judging
from reconcile.models import ReconciliationItem
from reconcile.nightly import NightlyResult, reconcile_day
from reconcile.polling.day import sources_of
from reconcile.timeutil import BUSINESS_TZ, utcnow
from sandbox.scenario import ScenarioOutcome, load_scenario, run_scenario, scenario_provider
from sandbox.server import BackgroundServer
from tests.conftest import SECRET, RunningNode, make_settings

EXAMPLES = Path(__file__).parents[2] / "examples" / "scenarios"


def _play(engine: Engine, name: str) -> tuple[ScenarioOutcome, NightlyResult]:
    scenario = load_scenario(EXAMPLES / name)
    provider = scenario_provider(scenario)
    # Yesterday: the whole day is over, and polling can see all of it.
    yesterday = utcnow().astimezone(BUSINESS_TZ).date() - timedelta(days=1)
    with sandbox_servers(provider) as urls:
        settings = make_settings(
            engine.url.render_as_string(hide_password=False),
            **urls.fields(),
            confirm_grace_seconds=0.001,
            poll_initial_lookback_seconds=3 * 86400,
        )
        with Node(settings, engine) as running, BackgroundServer(running.app) as server:
            node = RunningNode(running, server)
            outcome = run_scenario(
                scenario,
                provider,
                qrcode_webhook_url=server.url + "/webhooks/qrcode",
                accounts_webhook_url=server.url + "/webhooks/accounts",
                secret_header="X-Webhook-Secret",
                secret=SECRET,
                day=yesterday,
                sleep=lambda _seconds: None,
            )
            node.wait_processed(timeout=20)
            jobs = running.runtime.jobs
            assert jobs.poll_qrcode()
            assert jobs.poll_accounts()
            node.wait_processed(timeout=20)
            assert jobs.confirm()
            result = reconcile_day(
                engine,
                yesterday,
                judging=Judging.from_settings(settings),
                sources=sources_of(jobs.providers, settings),
            )
    return outcome, result


def _verdicts(engine: Engine, result: NightlyResult) -> dict[tuple[str, str], Any]:
    with session_scope(engine) as session:
        rows = session.execute(
            select(ReconciliationItem).where(
                ReconciliationItem.run_id == result.run_id  # type: ignore[arg-type]
            )
        ).scalars()
        return {(r.subject, r.ref): r for r in rows}


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
    verdicts = _verdicts(engine, result)
    for payment in outcome.payments:
        verdict = verdicts[("charge", f"{payment.kind}:{payment.txid}")]
        assert verdict.status == payment.outcome, payment.ref
        if payment.paid_cents:
            assert verdict.expected_cents == payment.due_cents, payment.ref
    _bridge_explains_the_day(result)
    # The short payment is an exception: the day breaks.
    assert result.verdict.value == "breaks"
    assert result.exit_code == 1
