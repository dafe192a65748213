"""A worker process tree killed with SIGKILL in the middle of its batches loses nothing and
does nothing twice: an item is processed in the transaction that marks it processed, so a
batch cut short leaves its items pending, and the sweeper of the next worker re-sends
them (docs/design.md §1.4).

Production mode with real processes: ``pixrecon serve`` with a broker, ``pixrecon worker
--processes 2`` on Redis and PostgreSQL, deliveries flowing the whole time."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import SECRET, wait_for
from tests.faults.support import (
    Load,
    Receiver,
    accounts,
    assert_every_acknowledged_delivery_had_one_effect,
    kill_tree,
    start_pixrecon,
    stop,
)

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


def test_a_worker_tree_killed_mid_batch_loses_nothing_and_repeats_nothing(
    postgres_database_url: str, redis_url: str, tmp_path: Path
) -> None:
    database = postgres_database_url
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIXRECON_")}
    env |= {
        "PIXRECON_DATABASE_URL": database,
        "PIXRECON_BROKER_URL": redis_url,
        "PIXRECON_WEBHOOK_SECRETS": SECRET,
        "PIXRECON_SCHEDULER_ENABLED": "0",
        "PIXRECON_LOG_LEVEL": "WARNING",
        "PIXRECON_WORKER_METRICS_PORT": "0",
        "PIXRECON_SWEEP_INTERVAL_SECONDS": "0.5",
        "PIXRECON_REDISPATCH_AFTER_SECONDS": "2",
    }
    receiver = Receiver(env, tmp_path)
    receiver.start()
    load = Load(receiver.url)
    worker_args = ("worker", "--processes", "2", "--threads", "4")
    worker = start_pixrecon(*worker_args, env=env, cwd=tmp_path, log=tmp_path / "worker.log")
    try:
        load.start()
        # Killed while items stream through it: some processed, some mid-batch.
        wait_for(lambda: accounts(database, []).processed >= 200, timeout=60, interval=0.05)
        kill_tree(worker)
        # Deliveries keep being acknowledged with no worker at all.
        acked = len(load.acknowledged)
        wait_for(lambda: len(load.acknowledged) >= acked + 100, timeout=30)
        worker = start_pixrecon(*worker_args, env=env, cwd=tmp_path, log=tmp_path / "worker.log")
        wait_for(lambda: len(load.acknowledged) >= acked + 300, timeout=30)
        load.stop()
        wait_for(lambda: accounts(database, []).pending == 0, timeout=60, interval=0.5)
    finally:
        load.stop()
        stop(worker)
        receiver.stop()
    assert_every_acknowledged_delivery_had_one_effect(database, list(load.acknowledged))
