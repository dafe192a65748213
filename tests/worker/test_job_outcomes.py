"""The workers' periodic jobs never claim or hide what they did not do. A day on which
nothing has moved is ``reconciled`` only once the statement was read: before that,
nothing says whether the provider booked anything (the workers' provisional run of
today, with the accounts poll failing or not yet run). A job that crashes says so in one
line and is tried again."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, select
from structlog.testing import capture_logs

from pixrecon.node import Node
from pixrecon.sandbox_wiring import sandbox_servers
from reconcile.db import session_scope
from reconcile.models import ReconciliationRun, ScheduledJob
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider
from tests.conftest import RunningNode, make_settings


@pytest.fixture
def node(engine: Engine) -> Iterator[RunningNode]:
    with sandbox_servers(SandboxProvider(seed=5)) as urls:
        settings = make_settings(engine.url.render_as_string(hide_password=False), **urls.fields())
        with Node(settings, engine) as running, BackgroundServer(running.app) as server:
            yield RunningNode(running, server)


def _latest(engine: Engine) -> ReconciliationRun:
    with session_scope(engine) as session:
        runs: list[ReconciliationRun] = list(session.execute(select(ReconciliationRun)).scalars())
    return max(runs, key=lambda run: run.id or 0)


def test_today_is_incomplete_until_the_statement_is_polled(node: RunningNode) -> None:
    jobs, engine = node.node.runtime.jobs, node.node.engine
    jobs.reconcile_today()
    before = _latest(engine)
    assert before.verdict == "incomplete"
    assert "statement was not read" in " ".join(
        json.loads(before.report or "{}")["incomplete_because"]
    )

    jobs.poll_accounts()
    # The balance read by the poll is the quiet day's balance once a worker has stored it.
    node.wait_processed()
    jobs.reconcile_today()
    after = _latest(engine)
    assert after.verdict == "reconciled", after.report
    assert after.report is not None
    balance = json.loads(after.report)["balance"]
    assert balance["opening_cents"] is not None
    assert balance["opening_cents"] == balance["closing_cents"]


def test_a_job_that_crashes_says_so_in_one_line_and_runs_again(
    node: RunningNode, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug in a job is one log line (its SQL, which may carry a payer's name, is not in
    it), the job shows failing, and the scheduler's thread never sees the exception."""

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug\n[SQL: INSERT … ('Maria da Silva', '12345678909')]")

    monkeypatch.setattr("worker.jobs.reconcile_day", broken)
    with capture_logs() as logs:
        assert node.node.runtime.jobs.reconcile_today() is False
    (crashed,) = [e for e in logs if e["event"] == "job_crashed"]
    assert crashed["error"] == "RuntimeError: a bug"
    assert "Maria" not in repr([e for e in logs if e["log_level"] != "debug"])
    with session_scope(node.node.engine) as session:
        job = session.get(ScheduledJob, "reconcile_today")
        assert job is not None
        assert job.last_error is not None


def test_the_daily_prune_runs_once_a_day_however_often_workers_start(
    node: RunningNode, engine: Engine
) -> None:
    """Every worker runs its jobs once when it starts: a restart, a deploy or a second
    node must not prune again, at whatever hour that is, within the prune's interval."""
    from reconcile.models import OperatorAction

    def prunes() -> int:
        with session_scope(engine) as session:
            return len(
                session.execute(
                    select(OperatorAction).where(OperatorAction.action == "prune")  # type: ignore[arg-type]
                ).all()
            )

    jobs = node.node.runtime.jobs
    already = prunes()
    if already == 0:
        assert jobs.prune() is True
    ran = prunes()
    assert ran >= 1
    assert jobs.prune() is False  # a worker starting again
    assert prunes() == ran
