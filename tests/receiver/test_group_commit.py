"""Group commit and the outbox: deliveries that arrive while a transaction is written
share the next one; acknowledgements still wait for their commit; one delivery the
database refuses does not fail the others; dispatch batches what accumulated."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Iterator, Sequence

import pytest
from sqlalchemy import Connection, Engine, func, select, text
from sqlalchemy.exc import DataError
from sqlmodel import col

from receiver import group_commit
from receiver.group_commit import GroupCommitter
from receiver.outbox import Outbox
from reconcile.db import session_scope
from reconcile.inbox import Delivery, NewItem, StoreResult
from reconcile.models import InboxItem, WebhookDelivery
from tests.conftest import RunningNode
from tests.factories import pix


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
    engine: Engine,
    committer: GroupCommitter,
    lead: Delivery,
    rest: Sequence[Delivery],
    *,
    in_loop: bool = False,
) -> list[StoreResult | BaseException]:
    """``lead`` goes first and its transaction waits on the lock; ``rest`` queue behind.
    ``in_loop``: the writer is a task of this event loop (as in the receiver's lifespan),
    not the thread."""
    if in_loop:
        await committer.start()
    try:
        return await _queued_behind_a_lock(engine, committer, lead, rest)
    finally:
        await committer.aclose()


async def _queued_behind_a_lock(
    engine: Engine, committer: GroupCommitter, lead: Delivery, rest: Sequence[Delivery]
) -> list[StoreResult | BaseException]:
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
    _share_the_next_one(engine, in_loop=False)


@pytest.fixture
def postgres_engine(postgres_database_url: str) -> Iterator[Engine]:
    """The loop's writer runs on PostgreSQL only."""
    from reconcile.db import create_db_engine

    engine = create_db_engine(postgres_database_url)
    yield engine
    engine.dispose()


@pytest.mark.postgres
def test_in_the_event_loop_deliveries_share_commits_as_with_the_thread(
    postgres_engine: Engine,
) -> None:
    _share_the_next_one(postgres_engine, in_loop=True)


def _share_the_next_one(engine: Engine, *, in_loop: bool) -> None:
    commits = _Commits()
    committer = GroupCommitter(engine, commits)
    deliveries = [_delivery(f"pix:{n}") for n in range(10)] + [_delivery("pix:3")]
    try:
        results = asyncio.run(
            _store_while_blocked(engine, committer, deliveries[0], deliveries[1:], in_loop=in_loop)
        )
        # Written by the loop's own task: no thread was needed.
        assert (committer._thread is None) is in_loop
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
@pytest.mark.parametrize("in_loop", [False, True], ids=["thread", "event-loop"])
def test_a_delivery_the_database_refuses_does_not_fail_its_batch(
    postgres_database_url: str, in_loop: bool
) -> None:
    from reconcile.db import create_db_engine

    engine = create_db_engine(postgres_database_url)
    commits = _Commits()
    committer = GroupCommitter(engine, commits)
    # PostgreSQL text cannot hold NUL: this one delivery is refused, whoever it is with.
    deliveries = [_delivery("pix:first"), _delivery("pix:nul", "\x00"), _delivery("pix:last")]
    try:
        first, refused, last = asyncio.run(
            _store_while_blocked(
                engine, committer, _delivery("pix:lead"), deliveries, in_loop=in_loop
            )
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


@pytest.mark.postgres
def test_in_the_event_loop_an_unreachable_database_is_unavailable_not_an_error() -> None:
    """As with the thread: the receiver answers 503 for what it could not store, and
    counts nothing as waiting any more."""
    from reconcile.db import UNAVAILABLE_ERRORS, create_db_engine
    from tests.conftest import free_port

    engine = create_db_engine(f"postgresql://postgres@127.0.0.1:{free_port()}/nowhere")
    committer = GroupCommitter(engine, _Commits())

    async def scenario() -> list[StoreResult | BaseException]:
        await committer.start()
        try:
            stores = [committer.store(_delivery(f"pix:{n}")) for n in range(3)]
            return await asyncio.gather(*stores, return_exceptions=True)
        finally:
            await committer.aclose()

    try:
        results = asyncio.run(scenario())
    finally:
        committer.stop()
        engine.dispose()
    assert all(isinstance(r, UNAVAILABLE_ERRORS) for r in results), results
    assert committer.waiting == 0
    assert committer._thread is None


def test_a_served_receiver_commits_on_its_event_loop_on_postgresql(
    running_node: RunningNode,
) -> None:
    """The app's lifespan starts the loop's writer on PostgreSQL: a delivery served over
    HTTP is committed without a writer thread; on SQLite the thread writes it."""

    def writers() -> int:
        return sum(t.name == "receiver-group-commit" for t in threading.enumerate())

    before = writers()
    response = running_node.post_pix({"pix": [pix()]})
    assert response.status_code == 200, response.text
    on_postgres = running_node.node.engine.dialect.name == "postgresql"
    assert writers() - before == (0 if on_postgres else 1)
    assert running_node.wait_processed()["pix_received"] == 1


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


def test_outbox_sends_commits_close_together_as_one_message() -> None:
    """A lone commit's ids go at once; those of commits following it within the interval
    wait and go together, unless a full message has gathered."""
    sent: list[tuple[float, list[int]]] = []
    outbox = Outbox(lambda ids: sent.append((time.monotonic(), list(ids))), min_interval=0.4)
    started = time.monotonic()
    outbox.put([1])
    _wait(lambda: len(sent) == 1)
    for n in range(2, 6):
        outbox.put([n])
        time.sleep(0.02)
    _wait(lambda: len(sent) == 2)
    outbox.put(list(range(100, 150)))
    outbox.put(list(range(150, 200)))  # a full message: it does not wait
    _wait(lambda: len(sent) == 3)
    outbox.stop()
    assert [ids for _, ids in sent] == [[1], [2, 3, 4, 5], list(range(100, 200))]
    first, second, third = (at for at, _ in sent)
    assert first - started < 0.2
    assert second - first >= 0.39
    assert third - second < 0.2


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


def _keys(engine: Engine) -> set[str]:
    with session_scope(engine) as session:
        return set(session.execute(select(col(InboxItem.key))).scalars())


def test_beyond_the_bound_a_delivery_is_refused_at_once_and_nothing_of_it_stored(
    engine: Engine,
) -> None:
    from receiver.group_commit import Overloaded

    committer = GroupCommitter(engine, _Commits(), max_waiting=3, deadline=30)

    async def scenario() -> list[StoreResult | BaseException]:
        with _writes_blocked(engine) as blocker:
            waiting = [asyncio.create_task(committer.store(_delivery(f"k{n}"))) for n in range(3)]
            await asyncio.sleep(0.2)
            assert committer.waiting == 3
            with pytest.raises(Overloaded):
                await committer.store(_delivery("refused"))
            blocker.rollback()
        return await asyncio.gather(*waiting, return_exceptions=True)

    try:
        results = asyncio.run(scenario())
    finally:
        committer.stop()
    assert all(isinstance(r, StoreResult) for r in results)
    assert _keys(engine) == {"k0", "k1", "k2"}
    assert committer.waiting == 0


def test_a_delivery_past_its_deadline_is_withdrawn_and_never_written(engine: Engine) -> None:
    _withdrawn_past_the_deadline(engine, in_loop=False)


@pytest.mark.postgres
def test_in_the_event_loop_a_delivery_past_its_deadline_is_withdrawn(
    postgres_engine: Engine,
) -> None:
    _withdrawn_past_the_deadline(postgres_engine, in_loop=True)


def _withdrawn_past_the_deadline(engine: Engine, *, in_loop: bool) -> None:
    """The writer is stuck on a lock; the deliveries behind it run out of time, are
    answered Overloaded (a 503), and stay out of the inbox once the writer moves on —
    while the one already in its transaction gets its real answer, late."""
    from receiver.group_commit import Overloaded

    committer = GroupCommitter(engine, _Commits(), max_waiting=100, deadline=0.5)

    async def scenario() -> tuple[
        StoreResult | BaseException, list[StoreResult | BaseException], list[float], StoreResult
    ]:
        if in_loop:
            await committer.start()
        try:
            with _writes_blocked(engine) as blocker:
                lead = asyncio.create_task(committer.store(_delivery("lead")))
                await asyncio.sleep(0.1)
                started = time.monotonic()

                async def timed(key: str) -> float:
                    with contextlib.suppress(Overloaded):
                        await committer.store(_delivery(key))
                    return time.monotonic() - started

                behind = [
                    asyncio.create_task(committer.store(_delivery(f"b{n}"))) for n in range(5)
                ]
                waited = [asyncio.create_task(timed("w"))]
                late = await asyncio.gather(*behind, return_exceptions=True)
                times = await asyncio.gather(*waited)
                assert not lead.done()
                assert committer.waiting == 1  # the lead alone, still in its transaction
                blocker.rollback()
            lead_result = (await asyncio.gather(lead, return_exceptions=True))[0]
            # The writer goes on to the next deliveries as usual.
            after = await committer.store(_delivery("after"))
            return lead_result, late, times, after
        finally:
            await committer.aclose()

    try:
        lead, late, times, after = asyncio.run(scenario())
        threaded = committer._thread is not None
    finally:
        committer.stop()
    assert isinstance(lead, StoreResult)
    assert all(isinstance(r, Overloaded) for r in late)
    # Answered at its deadline, not when the writer came free.
    assert 0.45 <= times[0] < 1.5
    assert isinstance(after, StoreResult)
    assert _keys(engine) == {"lead", "after"}
    assert committer.waiting == 0
    assert threaded is not in_loop


def test_an_overloaded_receiver_answers_503_with_retry_after_and_recovers(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    import httpx

    # The lead's transaction waits on the lock for as long as the second request takes,
    # which on a loaded machine may pass the second's grace for a stalled transaction.
    monkeypatch.setattr(group_commit, "IN_FLIGHT_GRACE", 10.0)

    from pixrecon.node import Node
    from sandbox.server import BackgroundServer
    from tests.conftest import SECRET, make_settings
    from tests.factories import pix

    settings = make_settings(
        engine.url.render_as_string(hide_password=False),
        max_waiting_deliveries=2,
        commit_deadline_seconds=0.5,
    )
    with Node(settings, engine) as node, BackgroundServer(node.app) as server:
        headers = {"X-Webhook-Secret": SECRET}
        url = server.url + "/webhooks/qrcode/pix"
        first: list[httpx.Response] = []
        with _writes_blocked(engine) as blocker, httpx.Client(headers=headers) as http:
            # The first delivery's transaction waits on the lock; it will be answered.
            lead = threading.Thread(
                target=lambda: first.append(
                    httpx.post(url, json={"pix": [pix()]}, headers=headers, timeout=30)
                )
            )
            lead.start()
            time.sleep(0.3)
            answer = http.post(url, json={"pix": [pix()]}, timeout=10)
            blocker.rollback()
            lead.join(timeout=30)
        assert [r.status_code for r in first] == [200]
        assert answer.status_code == 503
        assert answer.headers["retry-after"] == "5"
        assert answer.headers["content-type"] == "application/problem+json"
        assert answer.json()["type"].endswith("/overloaded")
        # The lock gone, the next delivery is taken at once.
        assert httpx.post(url, json={"pix": [pix()]}, headers=headers).status_code == 200
        metrics = httpx.get(server.url + "/metrics").text
    assert 'pixrecon_webhook_refusals_total{reason="overloaded",route="/webhooks/qrcode/pix"}' in (
        metrics
    )


def test_beyond_the_deliveries_in_progress_the_door_answers_503_before_reading(
    engine: Engine,
) -> None:
    import httpx

    from pixrecon.node import Node
    from sandbox.server import BackgroundServer
    from tests.conftest import SECRET, make_settings
    from tests.factories import pix

    settings = make_settings(
        engine.url.render_as_string(hide_password=False),
        max_waiting_deliveries=1,
        commit_deadline_seconds=30,
    )
    with Node(settings, engine) as node, BackgroundServer(node.app) as server:
        headers = {"X-Webhook-Secret": SECRET}
        url = server.url + "/webhooks/qrcode/pix"
        first: list[httpx.Response] = []
        with _writes_blocked(engine) as blocker:
            lead = threading.Thread(
                target=lambda: first.append(
                    httpx.post(url, json={"pix": [pix()]}, headers=headers, timeout=30)
                )
            )
            lead.start()
            time.sleep(0.3)
            started = time.monotonic()
            refused = httpx.post(url, json={"pix": [pix()]}, headers=headers, timeout=10)
            waited = time.monotonic() - started
            blocker.rollback()
            lead.join(timeout=30)
        # Health and metrics are never refused at the door.
        assert httpx.get(server.url + "/readyz").status_code == 200
    assert [r.status_code for r in first] == [200]
    assert refused.status_code == 503
    assert refused.headers["retry-after"] == "5"
    assert "in progress" in refused.json()["detail"]
    assert waited < 1.0  # at once, not after the deadline
    assert len(_keys(engine)) == 1  # the refused delivery stored nothing
