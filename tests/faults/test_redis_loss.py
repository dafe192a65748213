"""Redis loses everything during ingest — flushed, then killed and started again empty —
and nothing acknowledged is lost: Redis only wakes the workers up; the inbox rows are the
truth, and the workers' sweeper re-sends what was never processed (docs/design.md §1.2).

Real processes: ``pixrecon serve`` (with the broker) and ``pixrecon worker`` on a
redis-server of the test's own and PostgreSQL, deliveries flowing throughout."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from tests.conftest import RedisProcess, wait_for
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


def test_redis_flushed_and_restarted_during_ingest_loses_nothing(
    postgres_database_url: str, redis_process: RedisProcess, tmp_path: Path
) -> None:
    database = postgres_database_url
    env = pixrecon_env(database, redis_process.url)
    receiver = Receiver(env, tmp_path)
    receiver.start()
    worker = start_worker(env, tmp_path)
    load = Load(receiver.url)

    def acknowledged_grows(by: int) -> None:
        target = len(load.acknowledged) + by
        wait_for(lambda: len(load.acknowledged) >= target, timeout=30)

    try:
        load.start()
        acknowledged_grows(200)
        # The worker is up (it checks the broker as it starts) before Redis goes.
        wait_for(lambda: accounts(database, []).processed > 0, timeout=60, interval=0.2)
        # Every queued message gone at once.
        client = redis.Redis.from_url(redis_process.url)
        client.flushall()
        client.close()
        acknowledged_grows(200)
        # Then Redis itself: deliveries are still acknowledged, they are committed.
        redis_process.kill()
        acknowledged_grows(100)
        redis_process.start()
        acknowledged_grows(200)
        load.stop()
        wait_for(lambda: accounts(database, []).pending == 0, timeout=90, interval=0.5)
    finally:
        load.stop()
        stop(worker)
        receiver.stop()
    assert_every_acknowledged_delivery_had_one_effect(database, list(load.acknowledged))
