"""Sending inbox ids to the workers after commit. The broker is a wake-up signal only:
when a send fails the row is already durable and the sweeper sends it later."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from reconcile.logs import get_logger
from reconcile.metrics import DISPATCHES
from worker.actors import Actors

log = get_logger(__name__)

# One message carries a chunk of ids so that a large batch costs few broker round trips.
CHUNK = 100


class BrokerState:
    """Whether the broker takes messages, as this process last saw it.

    A receiver commits hundreds of times a second: during a broker outage, trying (and
    logging) on every commit would flood the log and wait on a dead socket each time.
    After a failure sends are skipped — their items stay pending, the sweeper sends them —
    until a backoff has passed (``first_backoff`` doubling up to ``max_backoff``); then
    one send probes. The outage is logged when it starts, every ``remind_every`` seconds
    while it lasts, and when it ends."""

    def __init__(
        self,
        *,
        first_backoff: float = 1.0,
        max_backoff: float = 30.0,
        remind_every: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._first_backoff = first_backoff
        self._max_backoff = max_backoff
        self._remind_every = remind_every
        self._clock = clock
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._failures = 0
        self._retry_at = 0.0
        self._reminded_at = 0.0
        self._deferred = 0

    @property
    def up(self) -> bool:
        return self._down_since is None

    def may_send(self, items: int) -> bool:
        """``False``: the broker is down and its backoff not over; the items are counted
        as deferred to the sweeper."""
        with self._lock:
            if self._down_since is None:
                return True
            now = self._clock()
            if now >= self._retry_at:
                return True
            self._deferred += items
            self._remind(now)
            return False

    def failed(self, error: str, items: int) -> None:
        with self._lock:
            now = self._clock()
            self._failures += 1
            self._deferred += items
            backoff = min(self._first_backoff * 2 ** (self._failures - 1), self._max_backoff)
            self._retry_at = now + backoff
            if self._down_since is None:
                self._down_since = self._reminded_at = now
                log.warning(
                    "broker_unavailable",
                    error=error,
                    items=items,
                    retry_in_seconds=backoff,
                    detail="the items stay pending; the sweeper sends them once it is back",
                )
            else:
                self._remind(now, error)

    def succeeded(self) -> None:
        with self._lock:
            if self._down_since is not None:
                log.info(
                    "broker_recovered",
                    down_seconds=round(self._clock() - self._down_since, 1),
                    deferred_items=self._deferred,
                )
            self._down_since = None
            self._failures = 0
            self._deferred = 0

    def _remind(self, now: float, error: str | None = None) -> None:
        if self._down_since is not None and now - self._reminded_at >= self._remind_every:
            self._reminded_at = now
            log.warning(
                "broker_still_unavailable",
                down_seconds=round(now - self._down_since, 1),
                deferred_items=self._deferred,
                error=error,
            )


class Dispatcher:
    def __init__(self, actors: Actors, broker_state: BrokerState | None = None) -> None:
        self._actors = actors
        self.broker_state = broker_state or BrokerState()

    def dispatch(self, item_ids: Sequence[int], *, origin: str = "receiver") -> bool:
        """Best effort; ``False`` means the sweeper will have to pick these up.
        ``origin`` (receiver, sweeper, poll, replay) only labels the metric."""
        ids = list(item_ids)
        if not ids:
            return True
        state = self.broker_state
        if not state.may_send(len(ids)):
            DISPATCHES.labels(origin, "failed").inc(len(ids))
            return False
        sent = 0
        try:
            for start in range(0, len(ids), CHUNK):
                chunk = ids[start : start + CHUNK]
                self._actors.send_items(chunk)
                sent += len(chunk)
        # Any failure of the broker (Redis down, a middleware raising) must not turn a
        # committed delivery into an error: the inbox row is the source of truth.
        except Exception as exc:
            DISPATCHES.labels(origin, "sent").inc(sent)
            DISPATCHES.labels(origin, "failed").inc(len(ids) - sent)
            state.failed(type(exc).__name__, len(ids) - sent)
            return False
        DISPATCHES.labels(origin, "sent").inc(sent)
        state.succeeded()
        return True

    def from_polls(self, item_ids: Sequence[int]) -> bool:
        return self.dispatch(item_ids, origin="poll")
