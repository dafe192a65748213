"""Scripted failures of the sandbox's HTTP endpoints, to exercise clients' retry paths."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter, deque
from dataclasses import dataclass
from enum import StrEnum


class Endpoint(StrEnum):
    TOKEN = "token"  # noqa: S105 - POST /oauth/token, not a secret
    API = "api"  # every QR code API route


@dataclass(frozen=True, slots=True)
class Fault:
    """One scripted answer: wait ``delay`` seconds, then fail with ``status`` if set.

    A delay without a status makes a slow but successful answer, which is how a client's
    read timeout gets exercised.
    """

    status: int | None = 503
    retry_after: int | None = None
    delay: float = 0.0

    @property
    def headers(self) -> dict[str, str] | None:
        return {"Retry-After": str(self.retry_after)} if self.retry_after is not None else None


class FaultQueue:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queues: dict[Endpoint, deque[Fault]] = {endpoint: deque() for endpoint in Endpoint}

    def add(self, endpoint: Endpoint, fault: Fault, count: int = 1) -> None:
        if count < 0:
            raise ValueError("count must not be negative")
        with self._lock:
            self._queues[endpoint].extend([fault] * count)

    def take(self, endpoint: Endpoint) -> Fault | None:
        with self._lock:
            queue = self._queues[endpoint]
            return queue.popleft() if queue else None

    async def play(self, endpoint: Endpoint) -> Fault | None:
        """Take the next fault for ``endpoint`` and wait out its delay; the fault if it
        fails the request, ``None`` if the request is to be answered normally."""
        fault = self.take(endpoint)
        if fault is None:
            return None
        if fault.delay > 0:
            await asyncio.sleep(fault.delay)
        return fault if fault.status is not None else None

    def pending(self, endpoint: Endpoint) -> int:
        with self._lock:
            return len(self._queues[endpoint])

    def clear(self) -> None:
        with self._lock:
            for queue in self._queues.values():
                queue.clear()


class ScriptedEndpoints:
    """Scripted faults and request counts of one API family: what tests drive and read.

    Inherited by ``SandboxProvider`` (the QR code API) and ``AccountsState`` (the accounts
    API), each with its own faults and counts, as each family has its own gateway.
    """

    def __init__(self) -> None:
        self.faults = FaultQueue()
        self._counts_lock = threading.Lock()
        self._request_counts: Counter[str] = Counter()

    def fail_next(
        self,
        count: int = 1,
        *,
        status: int = 503,
        retry_after: int | None = None,
        endpoint: Endpoint | str = Endpoint.API,
    ) -> None:
        """Answer the next ``count`` requests to ``endpoint`` with ``status``."""
        self.faults.add(Endpoint(endpoint), Fault(status=status, retry_after=retry_after), count)

    def delay_next(
        self, count: int = 1, *, seconds: float, endpoint: Endpoint | str = Endpoint.API
    ) -> None:
        """Answer the next ``count`` requests correctly, but only after ``seconds``."""
        self.faults.add(Endpoint(endpoint), Fault(status=None, delay=seconds), count)

    def record_request(self, name: str) -> None:
        with self._counts_lock:
            self._request_counts[name] += 1

    def requests_seen(self) -> Counter[str]:
        """A copy of every route's request count so far."""
        with self._counts_lock:
            return Counter(self._request_counts)

    def request_count(self, name: str) -> int:
        """Requests seen by route name, e.g. ``"GET /pix"``, ``"POST /oauth/token"``."""
        with self._counts_lock:
            return self._request_counts[name]
