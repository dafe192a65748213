"""Single-node mode's SQLite: the threads of one process take turns at the write lock in
a lock that wakes the next writer at once (``reconcile/db.py``), on every path that ends
a transaction — commit, rollback, an error, a connection returned mid-transaction."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from reconcile.db import create_db_engine, session_scope


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
