"""Polling as a primary source and confirm-by-API, against the sandbox over real HTTP."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal

import pytest
from sqlalchemy import Engine, select, update
from sqlmodel import col

from pixrecon.node import Node
from reconcile.db import session_scope
from reconcile.metrics import PROVIDER_REQUESTS
from reconcile.models import PixReceived, ScheduledJob
from reconcile.provider.qrcode_api import QrCodeApi
from reconcile.timeutil import utcnow
from sandbox.app import create_app
from sandbox.defaults import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider
from tests.conftest import RunningNode, make_settings, wait_for
from tests.factories import e2e_id, pix


@pytest.fixture
def provider() -> SandboxProvider:
    return SandboxProvider(seed=3)


@pytest.fixture
def sandbox_url(provider: SandboxProvider) -> Iterator[str]:
    with BackgroundServer(create_app(provider)) as server:
        yield server.url


def _node_settings(engine: Engine, sandbox_url: str, **overrides: object) -> dict[str, object]:
    return {
        "qrcode_api_url": sandbox_url,
        "qrcode_client_id": DEFAULT_CLIENT_ID,
        "qrcode_client_secret": DEFAULT_CLIENT_SECRET,
        "scheduler_enabled": False,  # the tests drive the jobs themselves
        **overrides,
    }


@pytest.fixture
def node(engine: Engine, sandbox_url: str) -> Iterator[RunningNode]:
    settings = make_settings(
        engine.url.render_as_string(hide_password=False),
        **_node_settings(engine, sandbox_url, confirm_grace_seconds=0.001),
    )
    with Node(settings, engine) as running, BackgroundServer(running.app) as server:
        yield RunningNode(running, server)


def _pix_rows(engine: Engine) -> dict[str, PixReceived]:
    with session_scope(engine) as session:
        return {p.end_to_end_id: p for p in session.execute(select(PixReceived)).scalars()}


def test_webhooks_are_confirmed_forged_and_tampered_ones_flagged(
    node: RunningNode, provider: SandboxProvider
) -> None:
    real = provider.receive_pix(Decimal("10.00"), txid="real0001")
    other = provider.receive_pix(Decimal("20.00"), txid="real0002")
    forged = pix(e2e=e2e_id(), valor="999.00")
    tampered = dict(other, valor="2000.00")
    assert node.post_pix({"pix": [real, forged, tampered]}).status_code == 200
    node.wait_processed()
    rows = _pix_rows(node.node.engine)
    assert {r.confirmation for r in rows.values()} == {"pending"}

    node.node.runtime.jobs.confirm()

    rows = _pix_rows(node.node.engine)
    assert rows[real["endToEndId"]].confirmation == "confirmed"
    assert rows[forged["endToEndId"]].confirmation == "unconfirmed_webhook"
    mismatch = rows[other["endToEndId"]]
    assert (mismatch.confirmation, mismatch.amount_cents, mismatch.confirmed_amount_cents) == (
        "amount_mismatch",
        200000,
        2000,
    )


def test_unknown_pix_stays_pending_inside_the_grace_period(
    engine: Engine, sandbox_url: str
) -> None:
    settings = make_settings(
        engine.url.render_as_string(hide_password=False),
        **_node_settings(engine, sandbox_url, confirm_grace_seconds=3600),
    )
    with Node(settings, engine) as running, BackgroundServer(running.app) as server:
        node = RunningNode(running, server)
        unknown = pix(e2e=e2e_id())
        node.post_pix({"pix": [unknown]})
        node.wait_processed()
        running.runtime.jobs.confirm()
        row = _pix_rows(engine)[unknown["endToEndId"]]
        assert row.confirmation == "pending"
        assert row.check_attempts == 1
        assert row.next_check_at is not None
        # Not due again yet: a second run does not call the API for it.
        running.runtime.jobs.confirm()
        assert _pix_rows(engine)[unknown["endToEndId"]].check_attempts == 1


def test_polling_finds_pix_no_webhook_brought_and_repeats_nothing(
    node: RunningNode, provider: SandboxProvider
) -> None:
    notified = provider.receive_pix(Decimal("5.00"), txid="notified1")
    silent = [provider.receive_pix(Decimal("7.00")), provider.receive_pix(Decimal("8.00"))]
    node.post_pix({"pix": [notified]})
    node.wait_processed()

    jobs = node.node.runtime.jobs
    jobs.poll_qrcode()
    summary = node.wait_processed()
    assert summary["only_by_polling"] == 2
    rows = _pix_rows(node.node.engine)
    for polled in silent:
        # Found by the API itself: confirmed on arrival.
        assert rows[polled["endToEndId"]].confirmation == "confirmed"
    # Notified first, then listed: the listing settled it, with no look-up of its own.
    assert rows[notified["endToEndId"]].confirmation == "confirmed"
    assert rows[notified["endToEndId"]].check_attempts == 1

    jobs.poll_qrcode()  # an overlapping window: everything seen again, nothing new
    assert node.wait_processed()["items"] == 3
    with session_scope(node.node.engine) as session:
        job = session.get(ScheduledJob, "poll_qrcode")
    assert job is not None
    assert job.last_window_end is not None
    assert job.last_error is None


def test_one_process_holds_a_job_lease_at_a_time(engine: Engine) -> None:
    from reconcile.schedule import claim
    from reconcile.timeutil import utcnow

    now = utcnow()
    with session_scope(engine) as session:
        assert claim(session, "poll_qrcode", "a", lease=timedelta(minutes=1), now=now)
        assert not claim(session, "poll_qrcode", "b", lease=timedelta(minutes=1), now=now)
        assert claim(session, "poll_qrcode", "a", lease=timedelta(minutes=1), now=now)
        later = now + timedelta(minutes=2)
        assert claim(session, "poll_qrcode", "b", lease=timedelta(minutes=1), now=later)


def test_an_interrupted_run_gives_its_lease_back_without_calling_it_failed(
    engine: Engine,
) -> None:
    """Ctrl-C during ``pixrecon poll``: the workers' next tick may run the job at once."""
    from reconcile.schedule import claim, leased
    from reconcile.timeutil import utcnow

    def interrupted() -> None:
        with leased(engine, "poll_qrcode", "pixrecon-poll", lease=timedelta(minutes=10)) as run:
            assert run is not None
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        interrupted()
    with session_scope(engine) as session:
        job = session.get(ScheduledJob, "poll_qrcode")
        assert job is not None
        assert job.last_error is None
        assert claim(session, "poll_qrcode", "worker", lease=timedelta(minutes=1), now=utcnow())


def test_provider_outage_is_recorded_and_retried(
    node: RunningNode, provider: SandboxProvider
) -> None:
    provider.receive_pix(Decimal("3.00"))
    provider.fail_next(20, status=503, retry_after=0)
    node.node.runtime.jobs.poll_qrcode()
    with session_scope(node.node.engine) as session:
        job = session.get(ScheduledJob, "poll_qrcode")
        assert job is not None
        assert job.last_error is not None
        assert job.last_window_end is None
    provider.faults.clear()
    node.node.runtime.jobs.poll_qrcode()
    assert node.wait_processed()["pix_received"] == 1


def test_scheduler_in_the_worker_polls_by_itself(
    engine: Engine, sandbox_url: str, provider: SandboxProvider
) -> None:
    provider.receive_pix(Decimal("1.23"))
    settings = make_settings(
        engine.url.render_as_string(hide_password=False),
        **_node_settings(engine, sandbox_url, scheduler_enabled=True),
    )
    with Node(settings, engine):
        wait_for(lambda: len(_pix_rows(engine)) == 1, timeout=15)
    (row,) = _pix_rows(engine).values()
    assert (row.amount_cents, row.confirmation) == (123, "confirmed")


def test_pix_api_from_settings_is_none_when_unconfigured() -> None:
    from reconcile.provider.factory import qrcode_api

    assert qrcode_api(make_settings("sqlite://")) is None
    api = qrcode_api(
        make_settings(
            "sqlite://", qrcode_api_url="http://x", qrcode_client_id="a", qrcode_client_secret="b"
        )
    )
    assert isinstance(api, QrCodeApi)


def test_charges_are_polled_into_expected_payments(
    node: RunningNode, provider: SandboxProvider
) -> None:
    from datetime import date

    from reconcile.models import ExpectedPayment

    provider.create_cob(Decimal("50.00"), txid="cobpolled0000000000000000001")
    provider.create_cobv(Decimal("75.10"), date(2026, 12, 1), txid="cobvpolled000000000000000001")
    provider.pay_charge("cobpolled0000000000000000001")
    node.node.runtime.jobs.poll_qrcode()
    node.wait_processed()
    with session_scope(node.node.engine) as session:
        charges = {c.kind: c for c in session.execute(select(ExpectedPayment)).scalars()}
    assert (charges["cob"].status, charges["cob"].amount_cents) == ("CONCLUIDA", 5000)
    assert charges["cob"].expires_at is not None
    assert (charges["cobv"].due_date, charges["cobv"].amount_cents) == (date(2026, 12, 1), 7510)
    assert charges["cobv"].payable_until is not None


def test_the_worker_reconciles_today_and_keeps_only_the_newest_verdicts(
    node: RunningNode, provider: SandboxProvider
) -> None:
    from reconcile.models import ReconciliationItem, ReconciliationRun

    provider.receive_pix(Decimal("2.50"))
    jobs = node.node.runtime.jobs
    jobs.poll_qrcode()
    node.wait_processed()
    jobs.reconcile_today()
    jobs.reconcile_today()
    with session_scope(node.node.engine) as session:
        runs = list(session.execute(select(ReconciliationRun)).scalars())
        items = list(session.execute(select(ReconciliationItem)).scalars())
    assert [r.status for r in runs] == ["completed", "completed"]
    assert {i.run_id for i in items} == {max(r.id or 0 for r in runs)}
    assert [i.status for i in items] == ["missing_webhook"]


def _look_ups() -> float:
    """Calls of ``GET /pix/{e2eid}`` this process made, by its own metrics."""
    return sum(
        sample.value
        for family in PROVIDER_REQUESTS.collect()
        for sample in family.samples
        if sample.name.endswith("_total") and sample.labels.get("endpoint") == "/pix/{id}"
    )


def test_a_pix_notified_after_the_last_listing_waits_for_the_next_one(
    node: RunningNode, provider: SandboxProvider
) -> None:
    """With the poll of ``GET /pix`` current, the confirm job leaves what webhooks brought
    since its last window to the next listing, which settles a page at a time."""
    jobs = node.node.runtime.jobs
    assert jobs.poll_qrcode()
    real = provider.receive_pix(Decimal("31.00"))
    forged = pix(e2e=e2e_id(), valor="32.00")
    node.post_pix({"pix": [real, forged]})
    node.wait_processed()

    asked = _look_ups()
    assert jobs.confirm()
    rows = _pix_rows(node.node.engine)
    assert {rows[p["endToEndId"]].check_attempts for p in (real, forged)} == {0}
    assert _look_ups() == asked

    assert jobs.poll_qrcode()
    rows = _pix_rows(node.node.engine)
    assert rows[real["endToEndId"]].confirmation == "confirmed"
    # The listing does not show the forged one: it is looked up on the following run,
    # and unknown past its (here tiny) grace period, flagged.
    assert rows[forged["endToEndId"]].confirmation == "pending"
    assert jobs.confirm()
    assert _pix_rows(node.node.engine)[forged["endToEndId"]].confirmation == ("unconfirmed_webhook")


def _listings() -> float:
    """Calls of ``GET /pix`` (the poll's listing) this process made, by its own metrics."""
    return sum(
        sample.value
        for family in PROVIDER_REQUESTS.collect()
        for sample in family.samples
        if sample.name.endswith("_total") and sample.labels.get("endpoint") == "/pix"
    )


def test_a_second_worker_process_does_not_run_a_job_again_within_its_interval(
    node: RunningNode, engine: Engine
) -> None:
    """Every process ticks each job on the same cadence, and a run gives its lease back
    when it ends: the process whose tick comes just after must not poll, confirm or
    reconcile again, or more worker processes would multiply the calls to the provider."""
    first = node.node.runtime.jobs
    second = copy.copy(first)
    second.owner = "another-worker-process"

    assert (first.poll_qrcode(), first.confirm(), first.reconcile_today()) == (True, True, True)
    listed = _listings()
    assert (second.poll_qrcode(), second.confirm(), second.reconcile_today()) == (
        False,
        False,
        False,
    )
    assert _listings() == listed
    # The process that ran them keeps its own cadence.
    assert first.poll_qrcode()

    # Once the interval has passed without it (the first process stopped), the next
    # tick of any process runs the job.
    with session_scope(engine) as session:
        session.execute(
            update(ScheduledJob)
            .where(col(ScheduledJob.name) == "poll_qrcode")
            .values(last_success_at=utcnow() - timedelta(minutes=5))
        )
    assert second.poll_qrcode()
    assert _listings() > listed
