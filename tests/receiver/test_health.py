"""``/healthz`` (for monitoring) and ``/readyz`` (for load balancers), each case over real
HTTP, on SQLite and PostgreSQL: healthy; the database unreachable; inbox items waiting too
long; a periodic job without success for too long, or never run; a fresh install.

The receiver is served without workers (no dispatcher, no scheduler): whatever it stores
stays pending, and the jobs' state is what each test writes in ``scheduled_job``."""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, event, update
from sqlalchemy.engine import make_url
from sqlmodel import col

from receiver.app import create_app
from receiver.routes import ops
from reconcile.db import create_db_engine, session_scope
from reconcile.models import InboxItem, ScheduledJob
from reconcile.provider.factory import ProviderClients
from reconcile.schedule import JOB_AGE_INTERVALS, job_intervals
from reconcile.settings import Settings
from reconcile.timeutil import utcnow
from sandbox.server import BackgroundServer
from tests.conftest import SECRET, free_port, make_settings, wait_for
from tests.factories import pix
from worker.runtime import build_runtime

# Configured, never called: nothing in these tests runs the periodic jobs.
QRCODE = {
    "qrcode_api_url": "http://127.0.0.1:9/qrcode",
    "qrcode_client_id": "client",
    "qrcode_client_secret": "client-secret",
}
ACCOUNTS = {
    "accounts_api_url": "http://127.0.0.1:9/accounts",
    "accounts_client_id": "client",
    "accounts_client_secret": "client-secret",
    "accounts_account_id": "account",
}
QRCODE_JOBS = {"confirm", "poll_qrcode", "reconcile_today", "prune"}


def _url(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=False)


@contextmanager
def served(engine: Engine, **overrides: object) -> Iterator[httpx.Client]:
    settings = make_settings(_url(engine), **overrides)
    with (
        BackgroundServer(create_app(settings, engine)) as server,
        httpx.Client(base_url=server.url, headers={"X-Webhook-Secret": SECRET}) as http,
    ):
        yield http


def _job(
    engine: Engine,
    name: str,
    *,
    succeeded_ago: float | None,
    error: str | None,
    leased_for: float | None = None,
) -> None:
    now = utcnow()
    last = now - timedelta(seconds=succeeded_ago) if succeeded_ago is not None else None
    # A success or a failure gives the lease back; a run under way holds it.
    lease = now + timedelta(seconds=leased_for) if leased_for is not None else last
    with session_scope(engine) as session:
        session.add(
            ScheduledJob(
                name=name,
                owner="elsewhere:1",
                leased_until=lease,
                last_success_at=last,
                last_error=error,
            )
        )


def _get(http: httpx.Client, path: str) -> tuple[int, dict[str, Any]]:
    response = http.get(path)
    assert response.headers["content-type"] == "application/json"
    body: dict[str, Any] = response.json()
    return response.status_code, body


@pytest.fixture
def unreachable_url(database_url: str, tmp_path: Path) -> str:
    """The same kind of database, where nothing answers: a SQLite file in a folder that
    does not exist, a PostgreSQL port nobody listens on."""
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        return f"sqlite:///{tmp_path / 'no-such-folder' / 'pixrecon.db'}"
    return url.set(port=free_port()).render_as_string(hide_password=False)


def test_healthy_when_every_expected_job_succeeds(engine: Engine) -> None:
    for name in QRCODE_JOBS:
        _job(engine, name, succeeded_ago=60, error=None)
    with served(engine, **QRCODE) as http:
        status, body = _get(http, "/healthz")
        assert status == 200, body
        assert body["status"] == "ok"
        assert body["problems"] == []
        assert body["database"] == "ok"
        assert body["oldest_pending_seconds"] == 0
        assert body["confirmation"].startswith("partial: the accounts API is not configured")
        assert set(body["jobs"]) == QRCODE_JOBS
        poll = body["jobs"]["poll_qrcode"]
        assert poll["last_success_at"] is not None
        assert 60 <= poll["seconds_without_success"] < 120
        assert poll["max_age_seconds"] == 1800
        assert poll["failing"] is False
        assert _get(http, "/readyz") == (200, {"status": "ok", "problems": [], "database": "ok"})


def test_database_unreachable_is_503_on_both(unreachable_url: str) -> None:
    engine = create_db_engine(unreachable_url)
    try:
        with served(engine, **QRCODE) as http:
            status, body = _get(http, "/healthz")
            assert status == 503
            assert body["status"] == "unavailable"
            assert body["database"] == "OperationalError"
            assert body["oldest_pending_seconds"] is None
            assert body["jobs"] is None
            assert "confirmation" in body
            [problem] = body["problems"]
            assert problem.startswith("the database does not answer (OperationalError)")
            assert "PIXRECON_DATABASE_URL" in problem

            status, ready = _get(http, "/readyz")
            assert status == 503
            assert ready["status"] == "unavailable"
            assert ready["database"] == "OperationalError"
            assert ready["problems"] == body["problems"]
    finally:
        engine.dispose()


def test_inbox_lag_over_the_threshold_is_unhealthy_but_still_ready(engine: Engine) -> None:
    with served(engine, health_max_lag_seconds=300) as http:
        assert http.post("/webhooks/qrcode/pix", json={"pix": [pix()]}).status_code == 200
        # Nothing processes it here: young, it is not a problem yet.
        assert _get(http, "/healthz")[0] == 200
        with session_scope(engine) as session:
            session.execute(update(InboxItem).values(received_at=utcnow() - timedelta(hours=1)))

        status, body = _get(http, "/healthz")
        assert status == 503
        assert body["status"] == "unhealthy"
        assert body["database"] == "ok"
        assert 3600 <= body["oldest_pending_seconds"] < 3700
        [problem] = body["problems"]
        assert problem.startswith("the oldest unprocessed inbox item has waited 36")
        assert "PIXRECON_HEALTH_MAX_LAG_SECONDS=300" in problem
        # A lagging worker must not take the receiver out of rotation.
        assert _get(http, "/readyz")[0] == 200
        assert http.post("/webhooks/qrcode/pix", json={"pix": [pix()]}).status_code == 200


def test_a_job_without_success_for_too_long_is_unhealthy_but_still_ready(engine: Engine) -> None:
    _job(engine, "confirm", succeeded_ago=10, error=None)
    # Failing for two hours: the provider refuses us, say.
    _job(engine, "poll_qrcode", succeeded_ago=7200, error="ProviderError: 401 invalid_client")
    # Neither failing nor succeeding: nobody runs it.
    _job(engine, "reconcile_today", succeeded_ago=3600, error=None)
    # A run under way for long: stuck, perhaps.
    _job(engine, "poll_accounts", succeeded_ago=3600, error=None, leased_for=300)
    with served(engine, **QRCODE, **ACCOUNTS) as http:
        status, body = _get(http, "/healthz")
        assert status == 503
        assert body["status"] == "unhealthy"
        assert body["database"] == "ok"
        accounts, poll, reconcile = body["problems"]
        assert accounts.startswith("periodic job poll_accounts last succeeded 36")
        assert "a run holds its lease now" in accounts
        assert body["jobs"]["poll_accounts"]["running"] is True
        assert poll.startswith("periodic job poll_qrcode last succeeded 72")
        assert "more than 1800 s (PIXRECON_HEALTH_MAX_JOB_AGE_SECONDS)" in poll
        assert "its last run failed with ProviderError" in poll
        # The error's type only: its text may carry what the provider said.
        assert "invalid_client" not in poll
        assert reconcile.startswith("periodic job reconcile_today last succeeded 36")
        assert "no worker runs it" in reconcile
        assert body["jobs"]["poll_qrcode"]["failing"] is True
        assert body["jobs"]["poll_qrcode"]["running"] is False
        assert body["jobs"]["confirm"]["seconds_without_success"] < 60
        assert _get(http, "/readyz")[0] == 200


def test_the_threshold_is_at_least_four_intervals_of_a_slow_job(engine: Engine) -> None:
    # Reconciled every two hours: seven hours without success is too long, six is not.
    _job(engine, "confirm", succeeded_ago=10, error=None)
    _job(engine, "poll_qrcode", succeeded_ago=10, error=None)
    _job(engine, "reconcile_today", succeeded_ago=6 * 3600, error=None)
    with served(engine, **QRCODE, reconcile_interval_seconds=7200) as http:
        status, body = _get(http, "/healthz")
        assert status == 200, body
        assert body["jobs"]["reconcile_today"]["max_age_seconds"] == JOB_AGE_INTERVALS * 7200
    with session_scope(engine) as session:
        session.execute(
            update(ScheduledJob)
            .where(col(ScheduledJob.name) == "reconcile_today")
            .values(last_success_at=utcnow() - timedelta(hours=9))
        )
    with served(engine, **QRCODE, reconcile_interval_seconds=7200) as http:
        status, body = _get(http, "/healthz")
        assert status == 503
        [problem] = [p.split(",")[0] for p in body["problems"]]
        # Nine hours ago when written; a second more if the clock ticked before it was read.
        said = re.fullmatch(r"periodic job reconcile_today last succeeded (\d+) s ago", problem)
        assert said, problem
        assert 32400 <= int(said.group(1)) <= 32405


FAST = {
    "health_max_job_age_seconds": 0.5,
    "poll_qrcode_interval_seconds": 0.1,
    "poll_accounts_interval_seconds": 0.1,
    "reconcile_interval_seconds": 0.1,
}


def test_a_job_that_never_ran_counts_from_the_receivers_start(engine: Engine) -> None:
    with served(engine, **QRCODE, **ACCOUNTS, **FAST) as http:
        # Just started: the workers get one threshold to run every job the first time.
        status, body = _get(http, "/healthz")
        assert status == 200, body
        assert body["jobs"]["poll_accounts"]["last_success_at"] is None
        wait_for(lambda: _get(http, "/healthz")[0] == 503, timeout=5)
        status, body = _get(http, "/healthz")
        assert sorted(p.split(" has not")[0] for p in body["problems"]) == [
            "periodic job confirm",
            "periodic job poll_accounts",
            "periodic job poll_qrcode",
            "periodic job reconcile_today",
        ]
        assert all("since this receiver started" in p for p in body["problems"])
        assert all("no worker runs it" in p for p in body["problems"])
        assert _get(http, "/readyz")[0] == 200


def test_a_fresh_install_without_a_provider_expects_no_job(engine: Engine) -> None:
    with served(engine, **FAST) as http:
        time.sleep(1.0)
        status, body = _get(http, "/healthz")
        assert status == 200, body
        assert body["jobs"] == {}
        assert body["confirmation"].startswith("impossible: no provider API")


def test_readyz_gives_up_on_a_database_that_does_not_answer(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = create_db_engine(_url(engine))

    @event.listens_for(slow, "checkout")
    def _stall(*_args: object) -> None:
        time.sleep(1.0)

    monkeypatch.setattr(ops, "READY_TIMEOUT_SECONDS", 0.2)
    try:
        with served(slow) as http:
            started = time.monotonic()
            status, body = _get(http, "/readyz")
            assert time.monotonic() - started < 0.9
            assert status == 503
            assert body["database"] == "timeout"
            [problem] = body["problems"]
            assert "no answer to SELECT 1 within 0.2 s" in problem
    finally:
        slow.dispose()


def test_both_are_in_the_openapi_document(engine: Engine) -> None:
    with served(engine) as http:
        paths = http.get("/openapi.json").json()["paths"]
    for path in ("/healthz", "/readyz"):
        assert set(paths[path]) == {"get"}
        assert paths[path]["get"]["security"] == []


def _scheduled(settings: Settings, tmp_path: Path) -> dict[str, float]:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'unused.db'}")
    runtime = build_runtime(settings, engine)
    providers = runtime.jobs.providers
    assert isinstance(providers, ProviderClients)
    providers.close()
    engine.dispose()
    return {job.name: job.interval for job in runtime.jobs.jobs()}


@pytest.mark.parametrize(
    "families",
    [(), (QRCODE,), (ACCOUNTS,), (QRCODE, ACCOUNTS)],
    ids=["none", "qrcode", "accounts", "both"],
)
def test_health_expects_exactly_what_the_workers_schedule(
    families: tuple[dict[str, str], ...], tmp_path: Path
) -> None:
    values = dict(itertools.chain.from_iterable(f.items() for f in families))
    settings = make_settings("sqlite://", poll_qrcode_interval_seconds=20, **values)
    assert job_intervals(settings) == _scheduled(settings, tmp_path)


def test_a_long_write_does_not_hold_up_healthz(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On SQLite a monitor's reads run beside a writer holding the file's write lock (a
    worker's batch, the nightly run). On PostgreSQL, reads a lock holds up past the
    timeout answer 503 ``timeout``, never a request left hanging."""
    monkeypatch.setattr(ops, "HEALTH_TIMEOUT_SECONDS", 1.0)
    with served(engine) as http, engine.connect() as holder:
        if engine.dialect.name == "sqlite":
            holder.exec_driver_sql("DELETE FROM inbox_item")  # in BEGIN IMMEDIATE: the lock
            expected = (200, "ok")
        else:
            holder.exec_driver_sql("LOCK TABLE inbox_item IN ACCESS EXCLUSIVE MODE")
            expected = (503, "timeout")
        started = time.monotonic()
        status, body = _get(http, "/healthz")
        took = time.monotonic() - started
        holder.rollback()
    assert (status, body["database"]) == expected, body
    assert took < 3, took
    if status == 503:
        [problem] = body["problems"]
        assert problem.startswith("the database does not answer (no answer within 1 s)")
