"""Sending committed inbox ids to the workers from a thread of its own, in batches.

The group-commit writer hands over the ids each transaction created and goes on writing;
this thread sends whatever has accumulated meanwhile in as few broker messages as the
dispatcher's chunking allows. A slow or absent broker therefore delays neither
acknowledgements nor commits.

Sends are at least ``min_interval`` apart unless a full message (``batch`` ids) is waiting:
a group commit every few milliseconds would otherwise cost a broker message each (0.4 to
0.8 ms of the receiver's CPU whatever its size) and hand the workers batches too small to
share a transaction well. An id waits that long at most; one arriving after a quiet
spell goes out at once.

Ids are only a wake-up call: when the broker is down, or more ids wait than
``max_pending``, they are dropped here and the sweeper of a worker re-dispatches their
rows, which are durable.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from reconcile.logs import get_logger

log = get_logger(__name__)

Dispatch = Callable[[Sequence[int]], object]


class Outbox:
    def __init__(
        self,
        dispatch: Dispatch,
        *,
        max_pending: int = 100_000,
        min_interval: float = 0.05,
        batch: int = 100,
    ) -> None:
        self._dispatch = dispatch
        self._max_pending = max_pending
        self._min_interval = min_interval
        self._batch = batch
        self._pending: list[int] = []
        self._condition = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None

    @property
    def pending(self) -> int:
        """Ids waiting to be sent."""
        with self._condition:
            return len(self._pending)

    def put(self, item_ids: Sequence[int]) -> None:
        if not item_ids:
            return
        with self._condition:
            if self._thread is None:
                self._stopping = False
                self._thread = threading.Thread(
                    target=self._run, name="receiver-outbox", daemon=True
                )
                self._thread.start()
            room = self._max_pending - len(self._pending)
            if room < len(item_ids):
                log.warning("outbox_full", dropped=len(item_ids) - max(room, 0))
            was_empty = not self._pending
            self._pending.extend(item_ids[: max(room, 0)])
            # Between these the thread is either asleep until its next send is due, or
            # sending: waking it for every commit would only cost the loop the GIL.
            if was_empty or len(self._pending) >= self._batch:
                self._condition.notify()

    def stop(self, timeout: float = 10.0) -> None:
        """Send what is pending, then stop."""
        with self._condition:
            self._stopping = True
            thread, self._thread = self._thread, None
            self._condition.notify()
        if thread is not None:
            thread.join(timeout)

    def _run(self) -> None:
        last_send = float("-inf")
        while True:
            with self._condition:
                while not self._pending and not self._stopping:
                    self._condition.wait()
                while not self._stopping and len(self._pending) < self._batch:
                    due = last_send + self._min_interval - time.monotonic()
                    if due <= 0:
                        break
                    self._condition.wait(due)
                ids, self._pending = self._pending, []
                stopping = self._stopping
            if ids:
                last_send = time.monotonic()
                try:
                    self._dispatch(ids)
                # The thread must outlive any broker failure; the sweeper re-sends the ids.
                except Exception as exc:
                    log.warning("outbox_dispatch_failed", items=len(ids), error=type(exc).__name__)
            if stopping and not ids:
                return
