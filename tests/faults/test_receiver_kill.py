"""A delivery answered 2xx survives a kill -9 of the receiver right after the answer: the
acknowledgement is sent only once its transaction has committed (docs/design.md §1.1).

A real ``pixrecon serve`` (single-node: its workers in-process) under concurrent
deliveries is killed the instant one of them is answered, mid-commit for others. Every
delivery it had answered must be in the inbox; restarted, it processes every one of them
exactly once. On SQLite this is the ``synchronous=NORMAL`` promise under WAL: a process
crash loses nothing committed (docs/reliability.md). If the receiver answered before its
commit, this test fails with the deliveries it lost."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import wait_for
from tests.faults.support import (
    Load,
    Receiver,
    accounts,
    assert_every_acknowledged_delivery_had_one_effect,
    pixrecon_env,
)

KILL_AFTER = 150


@pytest.fixture(params=["postgresql", "sqlite"])
def database(
    request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path
) -> Iterator[str]:
    if request.param == "postgresql":
        yield request.getfixturevalue("postgres_database_url")
    else:
        path = tmp_path / "kill.db"
        path.write_bytes(sqlite_template.read_bytes())
        yield f"sqlite:///{path}"


def test_every_acknowledged_delivery_survives_a_kill_9_right_after_its_answer(
    database: str, tmp_path: Path
) -> None:
    env = pixrecon_env(database, PIXRECON_REDISPATCH_AFTER_SECONDS="1")
    receiver = Receiver(env, tmp_path)
    receiver.start()
    process = receiver.process
    assert process is not None

    def kill_at(n: int) -> None:
        if n == KILL_AFTER:
            # Right after this answer, with other deliveries mid-commit.
            os.kill(process.pid, signal.SIGKILL)

    load = Load(receiver.url, on_ack=kill_at)
    try:
        load.start()
        wait_for(lambda: process.poll() is not None, timeout=60, interval=0.01)
        load.stop()
    finally:
        load.stop()
        receiver.stop()
    assert process.returncode == -signal.SIGKILL
    acknowledged = list(load.acknowledged)
    assert len(acknowledged) >= KILL_AFTER
    # Nothing acknowledged is missing, before anything restarts.
    assert accounts(database, acknowledged).lost == []

    receiver.start()
    try:
        wait_for(lambda: accounts(database, []).pending == 0, timeout=60, interval=0.5)
    finally:
        receiver.stop()
    assert_every_acknowledged_delivery_had_one_effect(database, acknowledged)
