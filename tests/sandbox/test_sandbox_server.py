"""``BackgroundServer``: any ASGI app on a real loopback port, in a thread."""

from __future__ import annotations

import contextlib
import socket
import statistics
import time
from collections.abc import AsyncIterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from sandbox.server import BackgroundServer


async def _hello(request: Request) -> PlainTextResponse:
    return PlainTextResponse("hello")


def _app() -> Starlette:
    return Starlette(routes=[Route("/", _hello)])


def test_serves_on_an_os_chosen_port_until_stopped() -> None:
    with BackgroundServer(_app()) as server:
        assert server.port != 0
        assert server.url == f"http://127.0.0.1:{server.port}"
        assert httpx.get(server.url).text == "hello"
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{server.port}")


def test_serves_on_a_given_port() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with BackgroundServer(_app(), port=port) as server:
        assert server.port == port
        assert httpx.get(server.url).status_code == 200


def test_keep_alive_requests_do_not_wait_for_delayed_acks() -> None:
    # Without TCP_NODELAY on accepted connections each response on a reused connection
    # waits for the client's delayed ACK: about 40 ms, which made the demo five times
    # slower. On loopback a request takes well under a millisecond of that.
    with BackgroundServer(_app()) as server, httpx.Client(base_url=server.url) as client:
        client.get("/")
        durations = []
        for _ in range(15):
            started = time.perf_counter()
            assert client.get("/").status_code == 200
            durations.append(time.perf_counter() - started)
    assert statistics.median(durations) < 0.020, durations


def test_a_busy_port_fails_fast() -> None:
    with BackgroundServer(_app()) as first, pytest.raises(OSError, match="in use"):
        BackgroundServer(_app(), port=first.port).start()


def test_a_failing_startup_is_reported() -> None:
    @contextlib.asynccontextmanager
    async def broken(app: Starlette) -> AsyncIterator[None]:
        raise RuntimeError("boom")
        yield  # pragma: no cover

    app = Starlette(routes=[Route("/", _hello)], lifespan=broken)
    with pytest.raises(RuntimeError, match="failed to start"):
        BackgroundServer(app, log_level="critical", lifespan="on").start()
