"""Group commit and the outbox: deliveries that arrive while a transaction is written
share the next one; acknowledgements still wait for their commit; one delivery the
database refuses does not fail the others; dispatch batches what accumulated."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator, Sequence

import pytest
from sqlalchemy import Connection, Engine, func, select, text
from sqlalchemy.exc import DataError
from sqlmodel import col

from receiver.group_commit import GroupCommitter
from receiver.outbox import Outbox
from reconcile.db import session_scope
from reconcile.inbox import Delivery, NewItem, StoreResult
from reconcile.models import InboxItem, WebhookDelivery


def _delivery(key: str, payload: str | None = None) -> Delivery:
    item = NewItem(kind="pix", key=key, payload=payload or json.dumps({"key": key}))
    return Delivery("/webhooks/qrcode/pix", "10.0.0.1", {}, b"{}", [item])


@contextlib.contextmanager
def _writes_blocked(engine: Engine) -> Iterator[Connection]:
    """Hold the lock every delivery insert needs, as a long transaction elsewhere would."""
    with engine.connect() as conn:
        conn.begin()  # on SQLite, BEGIN IMMEDIATE: the database's write lock
        if engine.dialect.name == "postgresql":
            conn.execute(text("LOCK TABLE webhook_delivery IN EXCLUSIVE MODE"))
        try:
            yield conn
        finally:
            conn.rollback()


class _Commits:
    def __init__(self) -> None:
        self.batches: list[int] = []
        self.new_ids: list[int] = []

    def __call__(self, new_ids: list[int], deliveries: int) -> None:
        self.batches.append(deliveries)
        self.new_ids.extend(new_ids)


async def _store_while_blocked(
    engine: Engine, committer: GroupCommitter, lead: Delivery, rest: Sequence[Delivery]
) -> list[StoreResult | BaseException]:
    """``lead`` goes first and its transaction waits on the lock; ``rest`` queue behind."""
    with _writes_blocked(engine) as blocker:
        tasks = [asyncio.create_task(committer.store(lead))]
        await asyncio.sleep(0.2)
        tasks += [asyncio.create_task(committer.store(d)) for d in rest]
        await asyncio.sleep(0.2)
        # Nothing is acknowledged before its commit.
        assert not any(task.done() for task in tasks)
        blocker.rollback()
    return await asyncio.gather(*tasks, return_exceptions=True)


def test_deliveries_arriving_during_a_commit_share_the_next_one(engine: Engine) -> None:
    commits = _Commits()
    committer = GroupCommitter(engine, commits)
    deliveries = [_delivery(f"pix:{n}") for n in range(10)] + [_delivery("pix:3")]
    try:
        results = asyncio.run(
            _store_while_blocked(engine, committer, deliveries[0], deliveries[1:])
        )
    finally:
        committer.stop()

    assert all(isinstance(r, StoreResult) for r in results)
    # The first waited alone on the lock; the ten that queued behind it went together.
    assert commits.batches == [1, 10]
    assert [len(r.new_ids) for r in results if isinstance(r, StoreResult)] == [1] * 10 + [0]
    assert sorted(commits.new_ids) == sorted(
        i for r in results if isinstance(r, StoreResult) for i in r.new_ids
    )
    with session_scope(engine) as session:
        assert session.scalar(select(func.count()).select_from(InboxItem)) == 10
        assert session.scalar(select(func.count()).select_from(WebhookDelivery)) == 11


@pytest.mark.postgres
def test_a_delivery_the_database_refuses_does_not_fail_its_batch(
    postgres_database_url: str,
) -> None:
    from reconcile.db import create_db_engine

    engine = create_db_engine(postgres_database_url)
    commits = _Commits()
    committer = GroupCommitter(engine, commits)
    # PostgreSQL text cannot hold NUL: this one delivery is refused, whoever it is with.
    deliveries = [_delivery("pix:first"), _delivery("pix:nul", "\x00"), _delivery("pix:last")]
    try:
        first, refused, last = asyncio.run(
            _store_while_blocked(engine, committer, _delivery("pix:lead"), deliveries)
        )[1:]
    finally:
        committer.stop()
        engine.dispose()

    assert isinstance(refused, DataError)
    assert isinstance(first, StoreResult)
    assert isinstance(last, StoreResult)
    assert len(first.new_ids) == len(last.new_ids) == 1
    engine = create_db_engine(postgres_database_url)
    with session_scope(engine) as session:
        keys = set(session.scalars(select(col(InboxItem.key))))
    engine.dispose()
    assert keys == {"pix:lead", "pix:first", "pix:last"}


def test_outbox_sends_what_accumulated_while_the_broker_was_busy() -> None:
    sent: list[list[int]] = []
    busy = threading.Event()
    release = threading.Event()

    def dispatch(ids: Sequence[int]) -> None:
        sent.append(list(ids))
        if len(sent) == 1:
            busy.set()
            release.wait(5)
        if len(sent) == 2:
            raise ConnectionError("broker gone")

    outbox = Outbox(dispatch)
    outbox.put([1])
    assert busy.wait(5)
    for n in range(2, 6):
        outbox.put([n, n * 10])
    release.set()
    outbox.put([])
    # A failing send does not stop the outbox: later ids still go out.
    _wait(lambda: len(sent) >= 2)
    outbox.put([7])
    outbox.stop()
    assert sent == [[1], [2, 20, 3, 30, 4, 40, 5, 50], [7]]


def test_outbox_drops_beyond_its_bound_for_the_sweeper() -> None:
    sent: list[int] = []
    gate = threading.Event()

    def dispatch(ids: Sequence[int]) -> None:
        gate.wait(5)
        sent.extend(ids)

    outbox = Outbox(dispatch, max_pending=3)
    outbox.put([1])
    _wait(lambda: outbox.pending == 0)
    outbox.put([2, 3, 4, 5])
    gate.set()
    outbox.stop()
    assert sent == [1, 2, 3, 4]


def _wait(predicate: object, timeout: float = 5.0) -> None:
    import time

    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)
