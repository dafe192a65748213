"""Sending inbox ids to the workers after commit. The broker is a wake-up signal only:
when a send fails the row is already durable and the sweeper sends it later."""

from __future__ import annotations

from collections.abc import Sequence

from reconcile.logs import get_logger
from reconcile.metrics import DISPATCHES
from worker.actors import Actors

log = get_logger(__name__)

# One message carries a chunk of ids so that a large batch costs few broker round trips.
CHUNK = 100


class Dispatcher:
    def __init__(self, actors: Actors) -> None:
        self._actors = actors

    def dispatch(self, item_ids: Sequence[int], *, origin: str = "receiver") -> bool:
        """Best effort; ``False`` means the sweeper will have to pick these up.
        ``origin`` (receiver, sweeper, poll) only labels the metric."""
        ids = list(item_ids)
        sent = 0
        try:
            for start in range(0, len(ids), CHUNK):
                chunk = ids[start : start + CHUNK]
                self._actors.send_items(chunk)
                sent += len(chunk)
        # Any failure of the broker (Redis down, a middleware raising) must not turn a
        # committed delivery into an error: the inbox row is the source of truth.
        except Exception as exc:
            log.warning("dispatch_failed", items=len(ids), error=type(exc).__name__)
            DISPATCHES.labels(origin, "sent").inc(sent)
            DISPATCHES.labels(origin, "failed").inc(len(ids) - sent)
            return False
        DISPATCHES.labels(origin, "sent").inc(sent)
        return True

    def from_polls(self, item_ids: Sequence[int]) -> bool:
        return self.dispatch(item_ids, origin="poll")
