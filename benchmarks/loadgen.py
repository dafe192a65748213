"""A lean HTTP/1.1 load generator for the benchmarks: keep-alive connections on asyncio
streams, requests pre-rendered as bytes, so that on a 2-core machine the client costs the
servers under test as little CPU as a Python client can.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

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


async def _exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
) -> int:
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    length = 0
    for line in header_lines:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    if length:
        await reader.readexactly(length)
    return int(status_line.split(" ", 2)[1])


class _Connection:
    """One keep-alive connection and what it measured; reopened after an error."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.result = LoadResult(seconds=0.0)
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def open(self) -> None:
        self._streams = await asyncio.open_connection(self.host, self.port)

    async def send(self, request: bytes, since: float) -> None:
        """Send ``request``; its latency counts from ``since``."""
        if self._streams is None:
            await self.open()
        assert self._streams is not None
        try:
            status = await _exchange(*self._streams, request)
        except (OSError, asyncio.IncompleteReadError, ValueError):
            self.result.errors += 1
            self.close()
            return
        self.result.latencies.append(time.perf_counter() - since)
        self.result.statuses[status] += 1

    def close(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None


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
    began = time.perf_counter()
    stop_at = began + seconds

    async def connection(n: int) -> LoadResult:
        conn = _Connection(host, _port_of(port, n))
        await conn.open()  # before the clock matters: connecting is not a request
        try:
            while time.perf_counter() < stop_at:
                request = make(next(counter))
                await conn.send(request, time.perf_counter())
        finally:
            conn.close()
        return conn.result

    parts = await asyncio.gather(*(connection(n) for n in range(connections)))
    return _merge(list(parts), time.perf_counter() - began)


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
    """Request i is due at ``start + i / rate``; whichever connection is free takes it."""
    total = int(rate * seconds)
    slots = iter(range(total))
    start = time.perf_counter() + 0.05

    async def connection(n: int) -> LoadResult:
        conn = _Connection(host, _port_of(port, n))
        await conn.open()  # before the clock matters: connecting is not a request
        try:
            for slot in slots:
                due = start + slot / rate
                delay = due - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                await conn.send(make(next(counter)), due)
        finally:
            conn.close()
        return conn.result

    parts = await asyncio.gather(*(connection(n) for n in range(connections)))
    return _merge(list(parts), time.perf_counter() - start)
