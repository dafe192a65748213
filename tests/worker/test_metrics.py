"""Metrics of every moving part, scraped over HTTP: a running receiver (``/metrics``) and a
real ``pixrecon worker`` process tree (its own endpoint) on PostgreSQL and Redis, polling
and confirming against the sandbox; and the gauges read from the database, figure by
figure."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import date, timedelta
from decimal import Decimal

import httpx
import pytest
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine, select
from sqlmodel import col

from pixrecon.node import Node
from pixrecon.sandbox_wiring import SandboxUrls, sandbox_servers, sandbox_settings
from reconcile.db import create_db_engine, session_scope
from reconcile.metrics_state import DatabaseStateCollector
from reconcile.models import (
    CaseState,
    ExceptionCase,
    InboxItem,
    PixReceived,
    ReconciliationItem,
    ReconciliationRun,
    ScheduledJob,
)
from reconcile.nightly import reconcile_day
from reconcile.processing import process_items
from reconcile.provider.counting import endpoint_label
from reconcile.timeutil import business_day_bounds, business_today, utcnow
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider
from tests.conftest import RunningNode, free_port, make_settings, wait_for
from tests.factories import pix
from tests.reconcile.day_book import DayBook

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(url: str) -> Samples:
    text = httpx.get(url, timeout=10).text
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum over every series of ``name`` whose labels include ``labels``."""
    wanted = set(labels.items())
    return sum(v for (n, series), v in samples.items() if n == name and wanted <= series)


def names(samples: Samples) -> set[str]:
    return {name for name, _ in samples}


# --- a receiver and a worker process on PostgreSQL and Redis ------------------------------


@pytest.fixture
def provider() -> SandboxProvider:
    return SandboxProvider(seed=12)


@pytest.fixture
def sandbox(provider: SandboxProvider) -> Iterator[SandboxUrls]:
    with sandbox_servers(provider) as urls:
        yield urls


@pytest.mark.postgres
@pytest.mark.redis
def test_receiver_and_worker_export_every_family(
    postgres_database_url: str,
    redis_url: str,
    provider: SandboxProvider,
    sandbox: SandboxUrls,
) -> None:
    notified = [provider.receive_pix(Decimal("10.00")) for _ in range(3)]
    silent = provider.receive_pix(Decimal("7.50"))  # only polling finds it
    metrics_port = free_port()
    env = {
        **os.environ,
        **sandbox_settings(sandbox),
        "PIXRECON_DATABASE_URL": postgres_database_url,
        "PIXRECON_BROKER_URL": redis_url,
        "PIXRECON_SCHEDULER_ENABLED": "1",
        "PIXRECON_POLL_QRCODE_INTERVAL_SECONDS": "1",
        "PIXRECON_RECONCILE_INTERVAL_SECONDS": "1",
        "PIXRECON_CONFIRM_GRACE_SECONDS": "0.001",
        "PIXRECON_WORKER_METRICS_PORT": str(metrics_port),
    }
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    worker = subprocess.Popen(
        [sys.executable, "-m", "pixrecon", "worker", "--processes", "2", "--threads", "2"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    engine = create_db_engine(postgres_database_url)
    settings = make_settings(postgres_database_url, broker_url=redis_url)
    worker_url = f"http://127.0.0.1:{metrics_port}/metrics"
    try:
        with Node(settings, engine) as node, BackgroundServer(node.app) as server:
            running = RunningNode(node, server)
            before = scrape(server.url + "/metrics")
            assert running.post_pix({"pix": notified}).status_code == 200
            assert running.post_pix({"pix": notified[:1]}).status_code == 200  # a repeat
            refused = running.http.post(
                "/webhooks/qrcode/pix", json={"pix": [pix()]}, headers={"X-Webhook-Secret": "no"}
            )
            assert refused.status_code == 401
            receiver = scrape(server.url + "/metrics")

            def worker_saw_everything() -> bool:
                try:
                    samples = scrape(worker_url)
                except httpx.HTTPError:
                    return False
                return (
                    value(samples, "pixrecon_items_processed_total", kind="pix") == 4
                    and value(samples, "pixrecon_confirmations_total", outcome="confirmed") >= 3
                    and value(samples, "pixrecon_reconciliation_runs_total") >= 1
                )

            wait_for(worker_saw_everything, timeout=60, interval=0.5)
            samples = scrape(worker_url)
            running.http.close()
    finally:
        worker.terminate()
        try:
            _, stderr = worker.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            _, stderr = worker.communicate()
        engine.dispose()
    assert worker.returncode == 0, stderr.decode()[-3000:]

    def delta(name: str, **labels: str) -> float:
        return value(receiver, name, **labels) - value(before, name, **labels)

    route = "/webhooks/qrcode/pix"
    assert delta("pixrecon_webhook_deliveries_total", route=route, status="200") == 2
    assert delta("pixrecon_webhook_deliveries_total", route=route, status="401") == 1
    assert delta("pixrecon_webhook_refusals_total", route=route, reason="unauthenticated") == 1
    assert delta("pixrecon_inbox_items_total", route=route, outcome="new") == 3
    assert delta("pixrecon_inbox_items_total", route=route, outcome="duplicate") == 1
    assert delta("pixrecon_webhook_ack_seconds_count", route=route) == 3
    # Each took well under the 2.5 s bucket: a time measured from the request's start.
    assert delta("pixrecon_webhook_ack_seconds_bucket", route=route, le="2.5") == 3
    assert delta("pixrecon_dispatch_total", origin="receiver", outcome="sent") == 3
    assert value(receiver, "pixrecon_receiver_commit_batch_deliveries_count") >= 2

    # The worker process tree: counted once across two processes (shared files).
    assert value(samples, "pixrecon_items_processed_total", kind="pix", status="processed") == 4
    assert value(samples, "pixrecon_item_latency_seconds_count", kind="pix") == 4
    assert value(samples, "pixrecon_dispatch_total", origin="poll", outcome="sent") >= 1
    assert value(samples, "pixrecon_job_runs_total", job_name="poll_qrcode", outcome="success") >= 1
    assert value(samples, "pixrecon_job_runs_total", job_name="confirm", outcome="success") >= 1
    assert value(samples, "pixrecon_confirmations_total", subject="pix", outcome="confirmed") >= 3
    assert value(samples, "pixrecon_provider_requests_total", api="qrcode", status="200") >= 2
    polled = value(samples, "pixrecon_provider_requests_total", api="qrcode", endpoint="/pix")
    # The notified Pix are confirmed by the poll's listing or, when the confirm job ran
    # first, one look-up each: either way endpoints are labelled by template, not by id.
    assert polled >= 1
    endpoints = {
        dict(series).get("endpoint", "")
        for name, series in samples
        if name == "pixrecon_provider_requests_total"
    }
    assert not [e for e in endpoints if re.search(r"E[0-9]{8}", e)], endpoints
    assert value(samples, "pixrecon_provider_request_seconds_count", api="qrcode") >= 4
    assert value(samples, "pixrecon_reconciliation_runs_total") >= 1
    # Dramatiq's own families, from the same endpoint.
    assert value(samples, "dramatiq_messages_total", actor_name="process_inbox_items") >= 1
    assert "dramatiq_message_duration_milliseconds_count" in names(samples)
    # Gauges read from the database.
    assert value(samples, "pixrecon_database_up") == 1
    assert value(samples, "pixrecon_inbox_items_by_status", status="pending") == 0
    assert value(samples, "pixrecon_inbox_oldest_pending_seconds") == 0
    assert value(samples, "pixrecon_confirmation_backlog", subject="pix") == 0
    last_poll = value(
        samples, "pixrecon_job_last_success_timestamp_seconds", job_name="poll_qrcode"
    )
    assert last_poll > 0
    assert value(samples, "pixrecon_job_failing", job_name="poll_qrcode") == 0
    # Today is only reconciled provisionally (reconcile_today): no day verdict for it yet,
    # but its run gives the money at risk.
    assert "pixrecon_day_verdict" not in names(samples)
    assert value(samples, "pixrecon_med_at_risk_brl") == 0
    assert "pixrecon_med_at_risk_brl" in names(samples)
    check = create_db_engine(postgres_database_url)
    with session_scope(check) as session:
        found = set(session.execute(select(col(PixReceived.end_to_end_id))).scalars())
    check.dispose()
    assert found == {p["endToEndId"] for p in [*notified, silent]}


# --- single-node mode: the receiver's /metrics serves the workers' families too ----------


def test_single_node_receiver_serves_worker_and_database_families(
    running_node: RunningNode,
) -> None:
    before = scrape(running_node.url + "/metrics")
    assert running_node.post_pix({"pix": [pix(), pix()]}).status_code == 200
    running_node.wait_processed()
    after = scrape(running_node.url + "/metrics")
    processed = {"kind": "pix", "status": "processed"}
    name = "pixrecon_items_processed_total"
    assert value(after, name, **processed) - value(before, name, **processed) == 2
    assert value(after, "pixrecon_database_up") == 1
    assert value(after, "pixrecon_inbox_items_by_status", status="pending") == 0
    assert "pixrecon_confirmation_backlog" in names(after)


def test_a_failed_item_is_counted_after_its_transaction(engine: Engine) -> None:
    with session_scope(engine) as session:
        item = InboxItem(source="webhook", kind="pix", key="pix:broken", payload="not json")
        session.add(item)
        session.flush()
        item_id = item.id
    assert item_id is not None

    def failed() -> float:
        labels = {"kind": "pix", "status": "failed"}
        return REGISTRY.get_sample_value("pixrecon_items_processed_total", labels) or 0.0

    before = failed()
    report = process_items(engine, [item_id])
    assert report.failed == [item_id]
    assert failed() - before == 1
    # Processing the same id again does nothing, and counts nothing.
    process_items(engine, [item_id])
    assert failed() - before == 1


# --- the gauges read from the database -----------------------------------------------------


def _collect(engine: Engine, **overrides: object) -> Samples:
    settings = make_settings(engine.url.render_as_string(hide_password=False), **overrides)
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in DatabaseStateCollector(engine, settings).collect()
        for sample in family.samples
    }


def test_database_gauges_say_what_waits_and_what_the_days_look_like(engine: Engine) -> None:
    now = utcnow()
    today = business_today()
    with session_scope(engine) as session:
        for n, (status, age) in enumerate(
            [("pending", 600), ("pending", 60), ("failed", 0), ("unsupported", 0), ("processed", 0)]
        ):
            session.add(
                InboxItem(
                    source="webhook",
                    kind="pix",
                    key=f"pix:{n}",
                    payload="{}",
                    status=status,
                    received_at=now - timedelta(seconds=age),
                )
            )
        session.add(ScheduledJob(name="poll_qrcode", last_success_at=now - timedelta(minutes=3)))
        session.add(ScheduledJob(name="confirm", last_error="ProviderUnavailable: 503"))
        report = {
            # A forged notification is no movement a webhook announced.
            "counts": {"matched": 6, "missing_webhook": 2, "duplicate": 5, "unconfirmed_webhook": 4}
        }
        yesterday, before = today - timedelta(days=1), today - timedelta(days=2)
        # Yesterday judged after it ended (the nightly run): its verdict counts.
        judged = ReconciliationRun(
            business_date=yesterday,
            status="completed",
            verdict="incomplete",
            report=json.dumps(report),
        )
        # The day before was only ever reconciled while it lasted: provisional, not exported.
        provisional = ReconciliationRun(
            business_date=before,
            status="completed",
            verdict="breaks",
            started_at=business_day_bounds(before)[0] + timedelta(hours=15),
        )
        # Today's run (the workers' reconcile_today): its MED figure is the current one.
        latest = ReconciliationRun(
            business_date=today,
            status="completed",
            verdict="breaks",
            report=json.dumps({"med": {"at_risk_cents": 123456}}),
        )
        session.add_all([judged, provisional, latest])
        session.flush()
        assert latest.id is not None
        for ref, priority, state in [
            ("a", 1, CaseState.OPEN),
            ("b", 1, CaseState.ACKNOWLEDGED),
            ("c", 2, CaseState.OPEN),
            ("d", 1, CaseState.RESOLVED),
        ]:
            session.add(
                ExceptionCase(
                    business_date=today,
                    subject="movement",
                    ref=ref,
                    status="unconfirmed_webhook",
                    state=state.value,
                    first_seen_run_id=latest.id,
                    last_seen_run_id=latest.id,
                )
            )
            session.add(
                ReconciliationItem(
                    run_id=latest.id,
                    subject="movement",
                    ref=ref,
                    status="unconfirmed_webhook",
                    exception=True,
                    reason="r",
                    priority=priority,
                )
            )
    samples = _collect(
        engine, qrcode_api_url="http://x", qrcode_client_id="a", qrcode_client_secret="b"
    )
    assert value(samples, "pixrecon_database_up") == 1
    assert 590 <= value(samples, "pixrecon_inbox_oldest_pending_seconds") <= 700
    for status, n in [("pending", 2), ("failed", 1), ("unsupported", 1)]:
        assert value(samples, "pixrecon_inbox_items_by_status", status=status) == n
    assert value(samples, "pixrecon_job_failing", job_name="confirm") == 1
    assert value(samples, "pixrecon_job_failing", job_name="poll_qrcode") == 0
    success = value(samples, "pixrecon_job_last_success_timestamp_seconds", job_name="poll_qrcode")
    assert abs(success - (now - timedelta(minutes=3)).timestamp()) < 1
    day = yesterday.isoformat()
    assert value(samples, "pixrecon_day_verdict", day=day, verdict="incomplete") == 1
    assert value(samples, "pixrecon_day_verdict", day=day, verdict="reconciled") == 0
    days = {dict(series).get("day") for name, series in samples if name == "pixrecon_day_verdict"}
    assert days == {day}
    assert value(samples, "pixrecon_webhook_coverage_ratio", day=day) == pytest.approx(6 / 8)
    assert value(samples, "pixrecon_med_at_risk_brl") == pytest.approx(1234.56)
    status = "unconfirmed_webhook"
    assert value(samples, "pixrecon_open_exceptions", status=status, priority="1") == 2
    assert value(samples, "pixrecon_open_exceptions", status=status, priority="2") == 1


def test_an_unreachable_database_is_a_gauge_not_a_failed_scrape() -> None:
    port = free_port()
    engine = create_db_engine(
        f"postgresql+psycopg://postgres@127.0.0.1:{port}/none?connect_timeout=2"
    )
    try:
        samples = _collect(engine)
    finally:
        engine.dispose()
    assert samples == {("pixrecon_database_up", frozenset()): 0}


def test_provider_endpoints_are_templates_not_identifiers() -> None:
    assert endpoint_label("/pix") == "/pix"
    assert endpoint_label("/pix/E12345678202611221500abcdefghijk") == "/pix/{id}"
    assert endpoint_label("/pix/E1234/devolucao/D42") == "/pix/{id}/devolucao/{id}"
    assert endpoint_label("/cob/cobTx00000000000000000000001") == "/cob/{id}"
    assert endpoint_label("/webhookrec") == "/webhookrec"
    assert endpoint_label("/v1/payments/123?x=1") == "/v1/payments/{id}"


def test_open_exceptions_rank_money_past_its_refund_deadline_first(engine: Engine) -> None:
    """An alert on priority 1 fires for money whose last day to be refunded has come,
    however long ago the day that raised it was judged."""
    past = date(2026, 3, 10)
    book = DayBook(engine, past)
    book.line("PIX_RECEIVED", 3_000, "12:00", credit=True, endToEndId="E" + "9" * 31)
    result = reconcile_day(engine, past, now=business_day_bounds(past)[1] + timedelta(hours=2))
    assert [e["priority"] for e in result.report["exceptions"]] == [2]
    samples = _collect(engine)
    assert value(samples, "pixrecon_open_exceptions", status="missing_webhook", priority="1") == 1
    assert value(samples, "pixrecon_open_exceptions", priority="2") == 0


def test_a_day_whose_breaks_people_all_resolved_is_told_apart(engine: Engine) -> None:
    """The verdict stays ``breaks`` (the sources disagree), and the alert on it stands down
    only through this gauge: every exception resolved, nothing unexplained in the bridge."""
    today = business_today()
    days = {
        "all resolved": (today - timedelta(days=1), CaseState.RESOLVED, 0, 1),
        "one still open": (today - timedelta(days=2), CaseState.OPEN, 0, 0),
        "resolved, residual": (today - timedelta(days=3), CaseState.RESOLVED, 500, 0),
    }
    with session_scope(engine) as session:
        for day, state, residual, _ in days.values():
            report = {"exceptions_found": 1, "bridge": {"residual_cents": residual}}
            run = ReconciliationRun(
                business_date=day, status="completed", verdict="breaks", report=json.dumps(report)
            )
            session.add(run)
            session.flush()
            assert run.id is not None
            session.add(
                ExceptionCase(
                    business_date=day,
                    subject="movement",
                    ref="a",
                    status="unconfirmed_webhook",
                    state=state.value,
                    first_seen_run_id=run.id,
                    last_seen_run_id=run.id,
                )
            )
    samples = _collect(engine)
    for what, (day, _, _, expected) in days.items():
        got = value(samples, "pixrecon_day_breaks_resolved", day=day.isoformat())
        assert got == expected, what
