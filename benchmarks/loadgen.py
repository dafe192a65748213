"""A lean HTTP/1.1 load generator for the benchmarks: keep-alive connections as asyncio
protocols on uvloop, requests rendered as bytes, so that on a 2-core machine the client
costs the servers under test as little CPU as a Python client can. ``run_load`` runs a load.

Two modes:

- closed loop (``closed``): each connection sends its next request as soon as the answer
  to the previous one arrives: the server's throughput ceiling;
- open loop (``open_loop``): requests are due at a fixed rate whatever the server does,
  and each latency is measured from the moment the request was *due*, so a server that
  falls behind is charged for the queue it builds (no coordinated omission).
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

TICK = 0.001

# Renders request number n (bytes of a whole HTTP/1.1 request).
MakeRequest = Callable[[int], bytes]


def http_request(path: str, body: bytes, headers: dict[str, str], host: str = "127.0.0.1") -> bytes:
    lines = [
        f"POST {path} HTTP/1.1",
        f"Host: {host}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        *(f"{name}: {value}" for name, value in headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@dataclass
class LoadResult:
    seconds: float
    latencies: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    errors: int = 0

    @property
    def ok(self) -> int:
        return sum(n for status, n in self.statuses.items() if 200 <= status < 300)

    @property
    def throughput(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def percentile_ms(self, q: float) -> float | None:
        if len(self.latencies) < 2:
            return None
        cuts = statistics.quantiles(self.latencies, n=1000, method="inclusive")
        return round(cuts[min(int(q * 1000) - 1, len(cuts) - 1)] * 1000, 2)

    def summary(self) -> dict[str, Any]:
        return {
            "seconds": round(self.seconds, 3),
            "requests": len(self.latencies),
            "requests_per_second": round(self.throughput, 1),
            "p50_ms": self.percentile_ms(0.50),
            "p99_ms": self.percentile_ms(0.99),
            "max_ms": round(max(self.latencies) * 1000, 2) if self.latencies else None,
            "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
            "errors": self.errors,
        }


class _Client(asyncio.Protocol):
    """One keep-alive connection, one request in flight at a time. A protocol rather than
    asyncio's streams: each answer is parsed in the callback that receives its bytes, with
    no task switch per read."""

    def __init__(self, pool: _Pool) -> None:
        self._pool = pool
        self._transport: asyncio.Transport | None = None
        self._buffer = b""
        self._since: float | None = None
        self.lost = asyncio.get_running_loop().create_future()

    @property
    def usable(self) -> bool:
        return self._transport is not None and not self._transport.is_closing()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        self._transport = cast(asyncio.Transport, transport)

    def send(self, request: bytes, since: float) -> None:
        """Send ``request``; its latency counts from ``since``."""
        assert self._transport is not None
        assert self._since is None
        self._since = since
        self._pool.in_flight += 1
        self._transport.write(request)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        try:
            status, length = _head(self._buffer[:end])
        except ValueError:
            self._abort()
            return
        if len(self._buffer) < end + 4 + length:
            return
        self._buffer = self._buffer[end + 4 + length :]
        if self._since is None:  # an answer to nothing asked
            self._abort()
            return
        result = self._pool.result
        result.latencies.append(time.perf_counter() - self._since)
        result.statuses[status] += 1
        self._since = None
        self._pool.in_flight -= 1
        self._pool.on_free(self)

    def _abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        if self._since is not None:  # a request that got no answer
            self._since = None
            self._pool.result.errors += 1
            self._pool.in_flight -= 1
            self._pool.on_settled()
        self.lost.set_result(None)


def _head(head: bytes) -> tuple[int, int]:
    """The status and ``Content-Length`` of a response's head."""
    status_line, _, headers = head.partition(b"\r\n")
    status = int(status_line.split(b" ", 2)[1])
    at = headers.lower().find(b"content-length:")
    if at < 0:
        return status, 0
    return status, int(headers[at + 15 :].split(b"\r\n", 1)[0])


class _Pool:
    """``size`` connections to ``port`` (one port, or several taken in turn as a load
    balancer would), each reopened when it is lost. ``on_free`` hears of every connection
    that can send; ``on_settled`` of every request that got no answer."""

    def __init__(
        self,
        host: str,
        port: int | Sequence[int],
        size: int,
        on_free: Callable[[_Client], None],
        on_settled: Callable[[], None],
    ) -> None:
        self.host, self.port, self.size = host, port, size
        self.on_free, self.on_settled = on_free, on_settled
        self.result = LoadResult(seconds=0.0)
        self.in_flight = 0
        self._clients: set[_Client] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._closing = False

    async def _open(self, n: int) -> _Client:
        loop = asyncio.get_running_loop()
        _, client = await loop.create_connection(
            lambda: _Client(self), self.host, _port_of(self.port, n)
        )
        self._clients.add(client)
        client.lost.add_done_callback(lambda _: self._lost(client, n))
        return client

    async def open(self) -> list[_Client]:
        return list(await asyncio.gather(*(self._open(n) for n in range(self.size))))

    def _lost(self, client: _Client, n: int) -> None:
        self._clients.discard(client)
        if not self._closing:
            task = asyncio.get_running_loop().create_task(self._reopen(n))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _reopen(self, n: int) -> None:
        while not self._closing:
            try:
                client = await self._open(n)
            except OSError:
                self.result.errors += 1
                await asyncio.sleep(0.01)
            else:
                self.on_free(client)
                return

    async def close(self) -> None:
        self._closing = True
        for task in list(self._tasks):
            task.cancel()
        clients = list(self._clients)
        for client in clients:
            client.close()
        await asyncio.gather(*(client.lost for client in clients))


def run_load(coroutine: Coroutine[Any, Any, LoadResult]) -> LoadResult:
    """Run a load on uvloop when it is installed (``uvicorn[standard]`` brings it): the
    client's share of the machine's two cores is the servers' loss."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvicorn[standard] is a dependency
        return asyncio.run(coroutine)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coroutine)


def _merge(parts: list[LoadResult], seconds: float) -> LoadResult:
    merged = LoadResult(seconds=seconds)
    for part in parts:
        merged.latencies.extend(part.latencies)
        merged.statuses.update(part.statuses)
        merged.errors += part.errors
    return merged


def _port_of(port: int | Sequence[int], n: int) -> int:
    """Connection ``n``'s port: with several receivers, connections take them in turn, as a
    load balancer in front of them would."""
    return port if isinstance(port, int) else port[n % len(port)]


async def closed(
    host: str,
    port: int | Sequence[int],
    make: MakeRequest,
    *,
    connections: int,
    seconds: float,
    counter: itertools.count[int],
) -> LoadResult:
    stop_at = float("inf")
    finished = asyncio.get_running_loop().create_future()

    def settled() -> None:
        if pool.in_flight == 0 and time.perf_counter() >= stop_at and not finished.done():
            finished.set_result(None)

    def on_free(client: _Client) -> None:
        if time.perf_counter() < stop_at:
            client.send(make(next(counter)), time.perf_counter())
        settled()

    pool = _Pool(host, port, connections, on_free, settled)
    clients = await pool.open()  # before the clock starts: connecting is not a request
    began = time.perf_counter()
    stop_at = began + seconds
    for client in clients:
        client.send(make(next(counter)), time.perf_counter())
    try:
        await finished
    finally:
        await pool.close()
    pool.result.seconds = time.perf_counter() - began
    return pool.result


async def open_loop(
    host: str,
    port: int | Sequence[int],
    make: MakeRequest,
    *,
    rate: float,
    seconds: float,
    connections: int,
    counter: itertools.count[int],
) -> LoadResult:
    """Request i is due at ``start + i / rate``; whichever connection is free takes it.
    The requests are rendered before the clock starts, and each wake-up sends every
    request due by then (the loop's timers have a millisecond's grain; a latency still
    counts from its request's own due time)."""
    total = int(rate * seconds)
    requests = [make(next(counter)) for _ in range(total)]
    sent = 0
    idle: list[_Client] = []
    start = 0.0
    finished = asyncio.get_running_loop().create_future()

    def due(slot: int) -> float:
        return start + slot / rate

    def settled() -> None:
        if sent >= total and pool.in_flight == 0 and not finished.done():
            finished.set_result(None)

    def on_free(client: _Client) -> None:
        nonlocal sent
        if sent < total and due(sent) <= time.perf_counter():
            client.send(requests[sent], due(sent))
            sent += 1
        else:
            idle.append(client)
        settled()

    pool = _Pool(host, port, connections, on_free, settled)
    idle.extend(await pool.open())  # before the clock starts: connecting is not a request
    start = time.perf_counter() + 0.05
    try:
        while sent < total:
            now = time.perf_counter()
            while sent < total and idle and due(sent) <= now:
                client = idle.pop()
                if client.usable:  # an idle connection the server closed is reopened
                    client.send(requests[sent], due(sent))
                    sent += 1
            if sent < total:
                # Until the next request falls due, and a millisecond at least: uvloop
                # runs a shorter timer at once, and the loop would spin. While every
                # connection is busy, the next answer sends it (``on_free``).
                await asyncio.sleep(max(due(sent) - time.perf_counter(), TICK))
        settled()
        await finished
    finally:
        await pool.close()
    pool.result.seconds = time.perf_counter() - start
    return pool.result
