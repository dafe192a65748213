"""A whole business day from a sandbox scenario, end to end: notifications with faults
(dropped, duplicated, delayed, reordered, forged) and API faults reach the receiver; the
poller and confirm-by-API fill the gaps; the nightly run reconciles the day. Everything is
checked against the scenario's ground truth."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlmodel import SQLModel

from reconcile.db import create_db_engine, session_scope
from reconcile.models import (
    AccountMovement,
    InboxItem,
    PixReceived,
    PixRefund,
    ReconciliationItem,
    StatementEntry,
)
from reconcile.nightly import NightlyResult
from sandbox.scenario import ScenarioOutcome
from tests.conftest import RunningNode, truncate
from tests.factories import pix
from tests.integration.scenario_day import played

EXAMPLE = Path(__file__).parents[2] / "examples" / "scenarios" / "business-day.json"


TAMPERED = "pix-walk-in"
"""A real Pix no webhook announced: the test posts a notification claiming ten times its
amount before polling finds it (a tampered or mistaken notification)."""


@dataclass
class Day:
    node: RunningNode
    outcome: ScenarioOutcome
    nightly: NightlyResult

    @property
    def tampered(self) -> str:
        return self.outcome.movement(TAMPERED).key


@pytest.fixture(scope="module")
def day(postgres_url: str) -> Iterator[Day]:
    """One day for the module (it takes a while: the scenario's API faults make the
    client back off for real), on PostgreSQL as in production."""
    engine = create_db_engine(postgres_url)
    truncate(engine)
    with played(engine, "business-day.json") as played_day:
        node, outcome = played_day.node, played_day.outcome
        walk_in = outcome.movement(TAMPERED)
        claim = pix(
            e2e=walk_in.key,
            valor=str(Decimal(walk_in.amount_cents) / 10),
            txid=None,
            horario=walk_in.at.isoformat(),
        )
        assert node.post_pix({"pix": [claim]}).status_code == 200
        node.wait_processed(timeout=20)
        # What the scheduler does tick after tick. The scenario's API faults (503 bursts,
        # slow answers, expired tokens) make some ticks fail; later ones retry.
        jobs = node.node.runtime.jobs
        for _tick in range(4):
            jobs.poll_qrcode()
            jobs.poll_accounts()
            node.wait_processed(timeout=20)
            jobs.confirm()
        yield Day(node, outcome, played_day.reconcile())
    engine.dispose()


def _rows(day: Day, model: type[SQLModel]) -> list[Any]:
    with session_scope(day.node.node.engine) as session:
        return list(session.execute(select(model)).scalars())


def test_every_real_movement_is_recorded_exactly_once(day: Day) -> None:
    received = {r.end_to_end_id: r for r in _rows(day, PixReceived)}
    real = day.outcome.movements_of("pix_received")
    for movement in real:
        row = received[movement.key]
        if movement.key == day.tampered:
            assert row.confirmation == "amount_mismatch"
            assert row.confirmed_amount_cents == movement.amount_cents
            continue
        assert row.amount_cents == movement.amount_cents, movement.ref
        assert row.confirmation == "confirmed", movement.ref
    forged = set(day.outcome.forged_end_to_end_ids)
    assert set(received) == {m.key for m in real} | forged

    refunds = {r.rtr_id: r for r in _rows(day, PixRefund)}
    for movement in day.outcome.movements_of("pix_refund"):
        assert refunds[movement.key].amount_cents == movement.amount_cents, movement.ref

    payouts = {
        m.idempotency_key: m
        for m in _rows(day, AccountMovement)
        if m.type in ("TRANSFER", "CASHOUT") and m.confirmation != "unconfirmed_webhook"
    }
    for movement in day.outcome.movements_of("payout"):
        assert movement.idempotency_key in payouts, movement.ref


def test_dropped_notifications_are_found_by_polling_and_forged_ones_flagged(day: Day) -> None:
    assert day.outcome.dropped, "the example day drops notifications"
    assert day.outcome.forged, "the example day forges notifications"
    items = {i.key: i for i in _rows(day, InboxItem)}
    for e2e in set(day.outcome.pix_only_by_polling) - {day.tampered}:
        item = items[f"pix:{e2e}"]
        assert (item.webhook_count, item.poll_count > 0) == (0, True), e2e
    for notification in day.outcome.duplicated:
        for key in notification.keys:
            if key in items:
                assert items[key].webhook_count >= notification.copies_acknowledged, key

    received = {r.end_to_end_id: r for r in _rows(day, PixReceived)}
    for e2e in day.outcome.forged_end_to_end_ids:
        assert received[e2e].confirmation == "unconfirmed_webhook"
    movements = {m.idempotency_key: m for m in _rows(day, AccountMovement)}
    for key in day.outcome.forged_idempotency_keys:
        assert movements[key].confirmation == "unconfirmed_webhook"


def test_the_nightly_run_agrees_with_the_ground_truth(day: Day) -> None:
    report = day.nightly.report
    truth = day.outcome
    verdicts = {
        (i.subject, i.ref): i
        for i in _rows(day, ReconciliationItem)
        if i.run_id == day.nightly.run_id
    }
    assert {p.kind for p in truth.payments} == {"cob", "cobv", "cobr"}
    for payment in truth.payments:
        verdict = verdicts[("charge", f"{payment.kind}:{payment.txid}")]
        assert verdict.status == payment.outcome, payment.ref
    only_polled = set(truth.pix_only_by_polling) - {day.tampered}
    for movement in truth.movements_of("pix_received"):
        expected = (
            "amount_mismatch"
            if movement.key == day.tampered
            else "missing_webhook"
            if movement.key in only_polled
            else "matched"
        )
        assert verdicts[("movement", movement.key)].status == expected, movement.ref
    for e2e in truth.forged_end_to_end_ids:
        assert verdicts[("movement", e2e)].status == "unconfirmed_webhook"
    notified = {
        key for n in truth.notifications if n.copies_acknowledged and not n.forged for key in n.keys
    }
    for refund in truth.movements_of("pix_refund"):
        # A refund whose final state no webhook brought is known from polling only.
        expected = (
            "matched" if f"refund:{refund.key}:{refund.status}" in notified else "missing_webhook"
        )
        assert verdicts[("movement", refund.key)].status == expected, refund.ref
    payout_status = {
        "LIQUIDATED": "settled",
        "REJECTED": "rejected",
        "CANCELED": "rejected",
        "REFUNDED": "refunded",
        "PARTIALLY_REFUNDED": "partially_refunded",
    }
    for payout in truth.movements_of("payout"):
        verdict = verdicts[("payout", payout.idempotency_key or "")]
        assert verdict.status == payout_status[payout.status], payout.ref
    for key in truth.forged_idempotency_keys:
        assert verdicts[("payout", key)].status == "unknown_to_provider"
    for case in truth.infractions:
        expected_case = "open_case" if case.status == "OPEN" else "closed"
        assert verdicts[("infraction", case.id)].status == expected_case, case.ref
    assert report["counts"]["duplicate"] >= sum(n.copies_acknowledged - 1 for n in truth.duplicated)
    # Like for like: credits are the Pix received, debits the payouts.
    by_category = truth.totals.by_category
    assert report["totals"]["credits"]["statement"] == by_category["PIX_RECEIVED"]
    assert report["totals"]["debits"]["statement"] == by_category["PIX_PAYMENT"]
    assert report["totals"]["refunds"]["statement"] == truth.totals.by_category.get(
        "PIX_REFUND_SENT", 0
    )
    assert report["balance_drift_cents"] == 0
    assert report["balance"]["closing_cents"] == truth.closing_balance_cents
    # The bridge explains the day from the opening to the closing balance, line by line.
    bridge = report["bridge"]
    assert bridge["residual_cents"] == 0
    assert bridge["unexplained_cents"] == 0
    booked = sum(row["sign"] * row["statement_cents"] for row in bridge["categories"])
    assert bridge["opening_cents"] + booked == bridge["closing_cents"]
    assert report["verdict"] == "breaks"
    statement = _rows(day, StatementEntry)
    assert (
        sum(s.amount_cents for s in statement if s.type == "CREDIT") >= truth.totals.credits_cents
    )
    assert day.nightly.exit_code == 1  # forged notifications and open cases remain
