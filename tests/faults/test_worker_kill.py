"""A worker process tree killed with SIGKILL in the middle of its batches loses nothing and
does nothing twice: an item is processed in the transaction that marks it processed, so a
batch cut short leaves its items pending, and the sweeper of the next worker re-sends
them (docs/design.md §1.4).

Production mode with real processes: ``pixrecon serve`` with a broker, ``pixrecon worker
--processes 2`` on Redis and PostgreSQL, deliveries flowing the whole time."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import wait_for
from tests.faults.support import (
    Load,
    Receiver,
    accounts,
    assert_every_acknowledged_delivery_had_one_effect,
    kill_tree,
    pixrecon_env,
    start_worker,
    stop,
)

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


def test_a_worker_tree_killed_mid_batch_loses_nothing_and_repeats_nothing(
    postgres_database_url: str, redis_url: str, tmp_path: Path
) -> None:
    database = postgres_database_url
    env = pixrecon_env(database, redis_url)
    receiver = Receiver(env, tmp_path)
    receiver.start()
    load = Load(receiver.url)
    worker = start_worker(env, tmp_path, processes=2)
    try:
        load.start()
        # Killed while items stream through it: some processed, some mid-batch.
        wait_for(lambda: accounts(database, []).processed >= 200, timeout=60, interval=0.05)
        kill_tree(worker)
        # Deliveries keep being acknowledged with no worker at all.
        acked = len(load.acknowledged)
        wait_for(lambda: len(load.acknowledged) >= acked + 100, timeout=30)
        worker = start_worker(env, tmp_path, processes=2)
        wait_for(lambda: len(load.acknowledged) >= acked + 300, timeout=30)
        load.stop()
        wait_for(lambda: accounts(database, []).pending == 0, timeout=60, interval=0.5)
    finally:
        load.stop()
        stop(worker)
        receiver.stop()
    assert_every_acknowledged_delivery_had_one_effect(database, list(load.acknowledged))
