"""The sweeper re-sends inbox rows that were committed but never processed (broker down,
process killed before dispatch, message lost), so nothing is lost if Redis loses all."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import dramatiq
from sqlalchemy import Engine

from reconcile.db import UNAVAILABLE_ERRORS, session_scope
from reconcile.inbox import claim_for_redispatch
from reconcile.logs import get_logger
from reconcile.timeutil import utcnow
from worker.dispatch import Dispatcher

log = get_logger(__name__)


class Sweeper:
    def __init__(
        self,
        engine: Engine,
        dispatcher: Dispatcher,
        *,
        interval: float,
        redispatch_after: float,
        batch_size: int = 500,
    ) -> None:
        self._engine = engine
        self._dispatcher = dispatcher
        self._interval = interval
        self._redispatch_after = timedelta(seconds=redispatch_after)
        self._batch_size = batch_size
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sweep_once(self) -> int:
        """Re-send one batch of stale pending items; returns how many were sent."""
        older_than = utcnow() - self._redispatch_after
        with session_scope(self._engine) as session:
            ids = claim_for_redispatch(session, older_than=older_than, limit=self._batch_size)
        if ids and not self._dispatcher.dispatch(ids, origin="sweeper"):
            # The claim stamped them; they come round again after redispatch_after.
            return 0
        if ids:
            log.info("sweeper_redispatched", items=len(ids))
        return len(ids)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                while self.sweep_once() == self._batch_size and not self._stop.is_set():
                    pass
            except UNAVAILABLE_ERRORS as exc:
                log.warning("sweeper_database_unavailable", error=type(exc).__name__)
            self._stop.wait(self._interval)

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="pixrecon-sweeper", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None


class SweeperMiddleware(dramatiq.Middleware):
    """Runs the sweeper inside every worker process, for as long as the worker runs."""

    def __init__(self, sweeper: Sweeper) -> None:
        self.sweeper = sweeper

    def after_worker_boot(self, broker: dramatiq.Broker, worker: Any) -> None:
        self.sweeper.start()

    def before_worker_shutdown(self, broker: dramatiq.Broker, worker: Any) -> None:
        self.sweeper.stop()
