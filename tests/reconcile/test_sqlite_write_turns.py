"""Single-node mode's SQLite: the threads of one process take turns at the write lock in
a lock that wakes the next writer at once (``reconcile/db.py``), on every path that ends
a transaction — commit, rollback, an error, a connection returned mid-transaction."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from reconcile.db import create_db_engine, session_scope, write_first


def _fail_mid_transaction(engine: Engine) -> None:
    with session_scope(engine) as session:
        session.execute(text("INSERT INTO t VALUES (0)"))
        raise RuntimeError("a bug mid-transaction")


def test_writers_take_turns_and_every_ending_hands_the_lock_on(tmp_path: Path) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'turns.db'}")
    with session_scope(engine) as session:
        session.execute(text("CREATE TABLE t (n INTEGER)"))
    # A rollback, an error inside a transaction, a connection closed mid-transaction.
    with engine.connect() as conn:
        conn.begin()
        conn.execute(text("INSERT INTO t VALUES (0)"))
        conn.rollback()
    with pytest.raises(RuntimeError):
        _fail_mid_transaction(engine)
    conn = engine.connect()
    conn.begin()
    conn.execute(text("INSERT INTO t VALUES (0)"))
    conn.close()

    waits: list[float] = []

    def writer() -> None:
        for n in range(100):
            started = time.perf_counter()
            with session_scope(engine) as session:
                waits.append(time.perf_counter() - started)
                session.execute(text("INSERT INTO t VALUES (:n)"), {"n": n})
                time.sleep(0.001)  # a transaction that takes a little while

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    with session_scope(engine) as session:
        assert session.execute(text("SELECT count(*) FROM t")).scalar_one() == 400
    engine.dispose()
    # Waiting only for the three others' short transactions, never for SQLite's busy
    # handler's sleeps (tens of milliseconds each).
    waits.sort()
    assert waits[int(len(waits) * 0.99)] < 0.05


def test_a_writer_others_wait_on_goes_before_the_queue(tmp_path: Path) -> None:
    """The receiver's group commit (``write_first``) waits for the transaction in
    progress, not for every worker batch queued before it."""
    engine = create_db_engine(f"sqlite:///{tmp_path / 'first.db'}")
    with session_scope(engine) as session:
        session.execute(text("CREATE TABLE t (n INTEGER)"))
    hold = 0.02
    stop = threading.Event()

    def batch_writer() -> None:
        while not stop.is_set():
            with session_scope(engine) as session:
                session.execute(text("INSERT INTO t VALUES (1)"))
                time.sleep(hold)  # a worker batch holding the lock

    waits: list[float] = []

    def committer() -> None:
        write_first()
        for _ in range(30):
            started = time.perf_counter()
            with session_scope(engine) as session:
                waits.append(time.perf_counter() - started)
                session.execute(text("INSERT INTO t VALUES (2)"))
            time.sleep(0.005)

    batches = [threading.Thread(target=batch_writer) for _ in range(4)]
    for thread in batches:
        thread.start()
    time.sleep(0.1)  # the four are queueing for the lock
    first = threading.Thread(target=committer)
    first.start()
    first.join(timeout=60)
    stop.set()
    for thread in batches:
        thread.join(timeout=10)
    engine.dispose()
    assert len(waits) == 30
    waits.sort()
    # At most the one batch in progress (20 ms), never the four queued (80 ms).
    assert waits[len(waits) // 2] < hold * 1.5
    assert waits[-1] < hold * 2.5


def test_a_steady_stream_of_commits_does_not_starve_the_others(tmp_path: Path) -> None:
    """Under commits back to back (a receiver at full load), the worker batches still
    get every other turn: their items are processed, not left pending."""
    engine = create_db_engine(f"sqlite:///{tmp_path / 'fair.db'}")
    with session_scope(engine) as session:
        session.execute(text("CREATE TABLE t (n INTEGER)"))
    stop = threading.Event()
    done = {"commits": 0, "batches": 0}

    def loop(name: str, first: bool) -> None:
        if first:
            write_first()
        while not stop.is_set():
            with session_scope(engine) as session:
                session.execute(text("INSERT INTO t VALUES (1)"))
                time.sleep(0.002)
            done[name] += 1

    threads = [threading.Thread(target=loop, args=("commits", True))]
    threads += [threading.Thread(target=loop, args=("batches", False)) for _ in range(2)]
    for thread in threads:
        thread.start()
    time.sleep(1.0)
    stop.set()
    for thread in threads:
        thread.join(timeout=30)
    engine.dispose()
    assert done["commits"] > 50
    assert done["batches"] > done["commits"] * 0.6, done
