"""Recording refused deliveries without letting a flood of junk load the database."""

from __future__ import annotations

import threading
import time

import anyio.to_thread
from sqlalchemy import Engine
from starlette.requests import Request

from receiver.problems import Problem
from reconcile.db import UNAVAILABLE_ERRORS, session_scope
from reconcile.logs import get_logger
from reconcile.models import stored_route
from reconcile.quarantine import quarantine

log = get_logger(__name__)


class QuarantineWriter:
    """At most ``rate`` rows a second per process (a token bucket); the rest are only
    counted in logs, so refusing an attack never costs a write per request."""

    def __init__(self, engine: Engine, *, max_rows: int, rate: float = 20.0) -> None:
        self._engine = engine
        self._max_rows = max_rows
        self._rate = rate
        self._tokens = rate
        self._stamp = time.monotonic()
        self._lock = threading.Lock()
        self.dropped = 0

    def _take(self) -> bool:
        with self._lock:
            now = time.monotonic()
            self._tokens = min(self._rate, self._tokens + (now - self._stamp) * self._rate)
            self._stamp = now
            if self._tokens >= 1:
                self._tokens -= 1
                return True
            self.dropped += 1
            return False

    async def record(
        self,
        request: Request,
        problem: Problem,
        *,
        remote_addr: str | None,
        headers: dict[str, str],
        body: bytes | None,
        body_size: int | None,
    ) -> None:
        if not self._take():
            return

        def write() -> None:
            with session_scope(self._engine) as session:
                quarantine(
                    session,
                    route=stored_route(request.url.path),
                    remote_addr=remote_addr,
                    status_code=problem.status,
                    reason=problem.slug,
                    detail=problem.detail,
                    headers=headers,
                    body=body,
                    body_size=body_size,
                    max_rows=self._max_rows,
                )

        try:
            await anyio.to_thread.run_sync(write)
        except UNAVAILABLE_ERRORS as exc:
            # The refusal stands either way; forensics are best effort.
            log.warning("quarantine_unavailable", error=type(exc).__name__)
