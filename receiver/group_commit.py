"""Group commit: deliveries that arrive while a transaction is being written wait for the
next one, and share it.

One writer thread takes whatever has queued up (at most ``max_batch``), stores it with
``store_deliveries`` in one transaction, and only then answers each waiting request: an
acknowledgement still means "durably in the inbox". Under light load a batch is a single
delivery and nothing waits for company; under heavy load the cost of a commit and of each
statement is shared by many deliveries.

A batch that fails for a reason other than the database being unavailable is retried one
delivery per transaction, so that one delivery the database refuses cannot take the others
of its batch down with it.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from sqlalchemy import Engine

from reconcile.db import UNAVAILABLE_ERRORS, session_scope
from reconcile.inbox import Delivery, StoreResult, store_deliveries
from reconcile.logs import get_logger

log = get_logger(__name__)

# Called after each commit with the ids the batch created, and the batch's size.
OnCommit = Callable[[list[int], int], None]

_STOP: Final = object()


@dataclass(frozen=True)
class _Waiting:
    delivery: Delivery
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[StoreResult]


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
    def __init__(self, engine: Engine, on_commit: OnCommit, *, max_batch: int = 256) -> None:
        self._engine = engine
        self._on_commit = on_commit
        self._max_batch = max_batch
        self._queue: queue.SimpleQueue[_Waiting | object] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    async def store(self, delivery: Delivery) -> StoreResult:
        """Store one delivery; returns once its transaction has committed."""
        self._ensure_started()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[StoreResult] = loop.create_future()
        self._queue.put(_Waiting(delivery, loop, future))
        return await future

    def _ensure_started(self) -> None:
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._run, name="receiver-group-commit", daemon=True
                    )
                    self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Finish what is queued, then stop the writer."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(_STOP)
            thread.join(timeout)

    def _run(self) -> None:
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
            try:
                self._write(batch)
            # The writer must outlive anything unforeseen, or every later request would
            # wait forever; the batch's requests get the error (a 500) instead.
            except Exception as exc:
                log.error("group_commit_failed", deliveries=len(batch), error=type(exc).__name__)
                self._answer([(waiting, exc) for waiting in batch])
            if stopping:
                return

    def _write(self, batch: Sequence[_Waiting]) -> None:
        try:
            with session_scope(self._engine) as session:
                results = store_deliveries(session, [w.delivery for w in batch])
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
        try:
            self._on_commit([i for result in results for i in result.new_ids], len(batch))
        # What happens after the commit must never stop the writer nor fail a request: the
        # rows are durable and the sweeper dispatches anything left behind.
        except Exception as exc:
            log.error("after_commit_failed", error=type(exc).__name__)
        self._answer(list(zip(batch, results, strict=True)))

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
