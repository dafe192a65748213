"""PostgreSQL stopped and started again during ingest: while it is down the receiver
answers 503 (never 2xx: nothing can be committed), and when it is back the same processes
go on — no restart — and every delivery acknowledged before, during and after the outage
is processed exactly once.

Real processes on a PostgreSQL server of the test's own (stopping the machine's would
disturb everything else): ``pixrecon serve`` with a broker and ``pixrecon worker`` on the
machine's Redis."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from migrations.apply import upgrade
from reconcile.db import create_db_engine
from tests.conftest import SECRET, wait_for
from tests.factories import pix
from tests.faults.postgres_instance import PostgresInstance
from tests.faults.support import (
    Load,
    Receiver,
    accounts,
    assert_every_acknowledged_delivery_had_one_effect,
    pixrecon_env,
    start_worker,
    stop,
)

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


@pytest.fixture
def postgres() -> Iterator[PostgresInstance]:
    instance = PostgresInstance()
    try:
        instance.init()
        instance.start()
        engine = create_db_engine(instance.url)
        upgrade(engine)
        engine.dispose()
        yield instance
    finally:
        instance.remove()


def test_postgres_stopped_during_ingest_means_503_then_recovery_without_restart(
    postgres: PostgresInstance, redis_url: str, tmp_path: Path
) -> None:
    database = postgres.url
    env = pixrecon_env(database, redis_url)
    receiver = Receiver(env, tmp_path)
    receiver.start()
    worker = start_worker(env, tmp_path)
    load = Load(receiver.url, senders=4)
    during: list[int] = []
    try:
        load.start()
        wait_for(lambda: len(load.acknowledged) >= 200, timeout=30)
        # The worker is up (it checks the database as it starts) before the outage.
        wait_for(lambda: accounts(database, []).processed > 0, timeout=60, interval=0.2)
        postgres.stop()
        before = len(load.acknowledged)
        # While it is down: 503 with Retry-After, and nothing acknowledged.
        with httpx.Client(base_url=receiver.url, headers={"X-Webhook-Secret": SECRET}) as http:
            for _ in range(5):
                answer = http.post("/webhooks/qrcode/pix", json={"pix": [pix()]}, timeout=10)
                during.append(answer.status_code)
            ready = http.get("/readyz", timeout=10).status_code
        stalled = len(load.acknowledged)
        postgres.start()
        # Back, with the same receiver and worker processes.
        wait_for(lambda: len(load.acknowledged) >= stalled + 200, timeout=60)
        load.stop()
        assert receiver.process is not None
        assert receiver.process.poll() is None
        assert worker.poll() is None
        wait_for(lambda: accounts(database, []).pending == 0, timeout=90, interval=0.5)
    finally:
        load.stop()
        stop(worker)
        receiver.stop()
    # Down: every delivery answered 503 (with nothing stored), and not ready.
    assert during == [503] * 5
    assert ready == 503
    # Acknowledged after the stop: at most those whose commit was under way (one a sender).
    assert stalled - before <= 4
    assert load.refused > 0
    assert_every_acknowledged_delivery_had_one_effect(database, list(load.acknowledged))
