"""Group commit: deliveries that arrive while a transaction is being written wait for the
next one, and share it.

One writer thread takes whatever has queued up (at most ``max_batch``), stores it with
``commit_deliveries`` in one transaction (on PostgreSQL, one statement), and only then
answers each waiting request: an acknowledgement still means "durably in the inbox". Under
light load a batch is a single delivery and nothing waits for company; under heavy load the
cost of a commit and of each statement is shared by many deliveries.

A batch that fails for a reason other than the database being unavailable is retried one
delivery per transaction, so that one delivery the database refuses cannot take the others
of its batch down with it.

Backpressure: at most ``max_waiting`` deliveries wait at once, and one that has waited
``deadline`` seconds without the writer taking it is withdrawn. Both are ``Overloaded``
(the receiver answers 503 with Retry-After) and store nothing: a withdrawn delivery is
skipped by the writer, and one the writer has already taken gets its real answer.

On PostgreSQL the writer is not a thread once ``start`` has run on the receiver's event
loop (its lifespan): a task of that loop writes each batch on a connection of its own
(``receiver/loop_connection.py``), awaited, so that no thread has to win the GIL back from
the loop after each commit. Requests served by another loop (a test client without its
lifespan), and SQLite, use the thread.
"""

from __future__ import annotations

import asyncio
import enum
import queue
import threading
from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from sqlalchemy import Engine

from receiver.loop_connection import LoopConnection
from reconcile.db import UNAVAILABLE_ERRORS, write_first
from reconcile.inbox import Delivery, StoreResult, commit_deliveries
from reconcile.logs import get_logger
from reconcile.timeutil import utcnow

log = get_logger(__name__)

# Called after each commit with the ids the batch created, and the batch's size.
OnCommit = Callable[[list[int], int], None]

_STOP: Final = object()


class Overloaded(Exception):
    """The delivery was not stored: too many wait already, or it waited too long."""


class Stalled(Exception):
    """The delivery's transaction was started, but the database has not confirmed it
    within the deadline (a network or server that stopped answering). The request is
    answered now, unacknowledged; if the transaction commits later, the provider's retry
    of the delivery is a counted duplicate."""


# How long a batch may be in its transaction before the deliveries past their deadline in
# it are answered: a commit takes milliseconds, so this is no race with a slow one.
IN_FLIGHT_GRACE: Final = 1.0


class _State(enum.Enum):
    QUEUED = enum.auto()
    TAKEN = enum.auto()  # in a batch being written: its answer will come
    WITHDRAWN = enum.auto()  # answered 503 already: the writer must not store it


@dataclass(eq=False)
class _Waiting:
    delivery: Delivery
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[StoreResult]
    state: _State = field(default=_State.QUEUED)
    # When the loop's writer withdraws it if it has not taken it (``loop.time()``).
    due: float = 0.0


Outcome = tuple[asyncio.Future[StoreResult], StoreResult | BaseException]


def _settle(outcomes: list[Outcome]) -> None:
    for future, outcome in outcomes:
        # A request whose client went away has cancelled its future; its rows stay.
        if future.done():
            continue
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)


class GroupCommitter:
    def __init__(
        self,
        engine: Engine,
        on_commit: OnCommit,
        *,
        max_batch: int = 256,
        max_waiting: int = 1000,
        deadline: float = 4.0,
    ) -> None:
        self._engine = engine
        self._on_commit = on_commit
        self._max_batch = max_batch
        self._max_waiting = max_waiting
        self._deadline = deadline
        self._queue: queue.SimpleQueue[_Waiting | object] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        # Deliveries queued or being written; guarded by _lock, like each _Waiting.state.
        self._waiting = 0
        self._in_loop: _LoopWriter | None = None

    @property
    def waiting(self) -> int:
        return self._waiting

    async def store(self, delivery: Delivery) -> StoreResult:
        """Store one delivery; returns once its transaction has committed. ``Overloaded``
        when it was not stored (too many waiting, or the deadline passed first)."""
        loop = asyncio.get_running_loop()
        in_loop = self._in_loop
        if in_loop is not None and in_loop.loop is not loop:
            in_loop = None
        if in_loop is None:
            self._ensure_started()
        future: asyncio.Future[StoreResult] = loop.create_future()
        waiting = _Waiting(delivery, loop, future)
        with self._lock:
            if self._waiting >= self._max_waiting:
                raise Overloaded(f"{self._waiting} deliveries already wait for a commit")
            self._waiting += 1
        if in_loop is not None:
            # The loop's writer enforces the deadline itself, for all its deliveries at
            # once: a timer and a shield per request cost the loop about 20 µs each.
            waiting.due = loop.time() + self._deadline
            in_loop.put(waiting)
            return await future
        self._queue.put(waiting)
        try:
            return await asyncio.wait_for(asyncio.shield(future), self._deadline)
        except TimeoutError:
            self._withdraw(waiting)
        # Withdrawn, the future holds ``Overloaded``; already in a transaction, its own
        # answer is coming — within the grace, or the request is answered unacknowledged:
        # a SQLite file another process holds locked keeps the writer waiting up to its
        # busy timeout (30 s), past the provider's own timeout.
        try:
            return await asyncio.wait_for(asyncio.shield(future), IN_FLIGHT_GRACE)
        except TimeoutError:
            raise Stalled(f"not confirmed written within {self._deadline:g} s") from None

    def _withdraw(self, waiting: _Waiting) -> None:
        """Answer ``Overloaded`` to a delivery past its deadline that no transaction has
        taken; the writer then skips it."""
        with self._lock:
            if waiting.state is not _State.QUEUED:
                return
            waiting.state = _State.WITHDRAWN
            self._waiting -= 1
        if not waiting.future.done():
            waiting.future.set_exception(
                Overloaded(f"not written within {self._deadline:g} s of arriving")
            )

    def _ensure_started(self) -> None:
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._run, name="receiver-group-commit", daemon=True
                    )
                    self._thread.start()

    async def start(self) -> None:
        """Write from now on in a task of the running event loop, on PostgreSQL (the
        receiver's lifespan calls this on the loop that serves its requests)."""
        if self._engine.dialect.name == "postgresql" and self._in_loop is None:
            self._in_loop = _LoopWriter(self, LoopConnection(self._engine))

    async def aclose(self) -> None:
        """Finish what the loop's writer has queued, then close its connection."""
        in_loop, self._in_loop = self._in_loop, None
        if in_loop is not None:
            await in_loop.close()

    def stop(self, timeout: float = 10.0) -> None:
        """Finish what is queued, then stop the writer."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(_STOP)
            thread.join(timeout)

    def _run(self) -> None:
        # Every delivery in the batch waits for this commit before it is answered; a worker
        # batch can wait a moment longer (single-node mode's one SQLite write lock).
        write_first()
        while True:
            first = self._queue.get()
            if not isinstance(first, _Waiting):  # the stop sentinel
                return
            batch = [first]
            stopping = False
            while len(batch) < self._max_batch:
                try:
                    entry = self._queue.get_nowait()
                except queue.Empty:
                    break
                if not isinstance(entry, _Waiting):
                    stopping = True
                    break
                batch.append(entry)
            batch = self._take(batch)
            try:
                if batch:
                    self._write(batch)
            # The writer must outlive anything unforeseen, or every later request would
            # wait forever; the batch's requests get the error (a 500) instead.
            except Exception as exc:
                log.error("group_commit_failed", deliveries=len(batch), error=type(exc).__name__)
                self._answer([(waiting, exc) for waiting in batch])
            finally:
                self._finished(len(batch))
            if stopping:
                return

    def _take(self, batch: list[_Waiting]) -> list[_Waiting]:
        """The deliveries of ``batch`` still wanted, marked as being written; those
        withdrawn (answered 503) are left out and stored nowhere."""
        with self._lock:
            taken = [w for w in batch if w.state is _State.QUEUED]
            for waiting in taken:
                waiting.state = _State.TAKEN
        return taken

    def _write(self, batch: Sequence[_Waiting]) -> None:
        try:
            results = commit_deliveries(self._engine, [w.delivery for w in batch])
        except UNAVAILABLE_ERRORS as exc:
            self._answer([(w, exc) for w in batch])
            return
        except Exception as exc:
            if len(batch) == 1:
                self._answer([(batch[0], exc)])
                return
            log.warning("group_commit_split", deliveries=len(batch), error=type(exc).__name__)
            for waiting in batch:
                self._write([waiting])
            return
        self._answer(self._committed(batch, results))

    def _committed(
        self, batch: Sequence[_Waiting], results: Sequence[StoreResult]
    ) -> list[tuple[_Waiting, StoreResult | BaseException]]:
        try:
            self._on_commit([i for result in results for i in result.new_ids], len(batch))
        # What happens after the commit must never stop the writer nor fail a request: the
        # rows are durable and the sweeper dispatches anything left behind.
        except Exception as exc:
            log.error("after_commit_failed", error=type(exc).__name__)
        return list(zip(batch, results, strict=True))

    def _finished(self, count: int) -> None:
        with self._lock:
            self._waiting -= count

    @staticmethod
    def _answer(answers: Sequence[tuple[_Waiting, StoreResult | BaseException]]) -> None:
        """Wake the waiting requests: one call into each event loop per batch, not one
        per request."""
        by_loop: defaultdict[asyncio.AbstractEventLoop, list[Outcome]] = defaultdict(list)
        for waiting, outcome in answers:
            by_loop[waiting.loop].append((waiting.future, outcome))
        for loop, outcomes in by_loop.items():
            try:
                loop.call_soon_threadsafe(_settle, outcomes)
            except RuntimeError:
                # The loop has closed: nobody waits for these answers any more.
                continue


class _LoopWriter:
    """The group commit's writer as a task of one event loop (PostgreSQL): the same
    batches, the same answers and the same retry one by one as the thread's, awaited."""

    def __init__(self, committer: GroupCommitter, connection: LoopConnection) -> None:
        self.loop = asyncio.get_running_loop()
        self._committer = committer
        self._connection = connection
        self._pending: deque[_Waiting] = deque()
        # The batch in its transaction, and since when (``loop.time()``).
        self._inflight: Sequence[_Waiting] = ()
        self._taken_at = 0.0
        self._wake = asyncio.Event()
        self._closing = False
        self._task = self.loop.create_task(self._run(), name="receiver-group-commit")
        self._expiry = self.loop.create_task(self._expire(), name="receiver-commit-deadline")

    def put(self, waiting: _Waiting) -> None:
        self._pending.append(waiting)
        self._wake.set()

    async def close(self) -> None:
        self._closing = True
        self._wake.set()
        await self._task
        self._expiry.cancel()
        await self._connection.close()

    async def _expire(self) -> None:
        """Withdraw the deliveries that waited past the deadline, oldest first, while the
        writer is busy (a stalled database, a commit slower than the deadline): one timer
        for all of them, a fraction of the deadline late at most."""
        committer = self._committer
        tick = min(max(committer._deadline / 8, 0.01), 0.25)
        while True:
            await asyncio.sleep(tick)
            now = self.loop.time()
            # In arrival order: the first one not yet due ends the walk.
            for waiting in self._pending:
                if waiting.due > now:
                    break
                committer._withdraw(waiting)
            # A transaction the database stopped answering would hold its deliveries
            # until TCP gives up, minutes later, past the provider's own timeout.
            if self._inflight and now - self._taken_at >= IN_FLIGHT_GRACE:
                stalled = Stalled(f"not confirmed written within {committer._deadline:g} s")
                _settle([(w.future, stalled) for w in self._inflight if w.due <= now])

    async def _run(self) -> None:
        committer = self._committer
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                taken = [
                    self._pending.popleft()
                    for _ in range(min(len(self._pending), committer._max_batch))
                ]
                batch = committer._take(taken)
                self._inflight, self._taken_at = batch, self.loop.time()
                try:
                    if batch:
                        await self._write(batch)
                # As the thread's: the writer must outlive anything unforeseen.
                except Exception as exc:
                    log.error(
                        "group_commit_failed", deliveries=len(batch), error=type(exc).__name__
                    )
                    _settle([(w.future, exc) for w in batch])
                finally:
                    self._inflight = ()
                    committer._finished(len(batch))
            if self._closing:
                return

    async def _write(self, batch: Sequence[_Waiting]) -> None:
        try:
            results = await self._connection.store([w.delivery for w in batch], utcnow())
        except UNAVAILABLE_ERRORS as exc:
            _settle([(w.future, exc) for w in batch])
            return
        except Exception as exc:
            if len(batch) == 1:
                _settle([(batch[0].future, exc)])
                return
            log.warning("group_commit_split", deliveries=len(batch), error=type(exc).__name__)
            for waiting in batch:
                await self._write([waiting])
            return
        _settle([(w.future, outcome) for w, outcome in self._committer._committed(batch, results)])
