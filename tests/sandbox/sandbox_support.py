"""Shared by the sandbox tests and the provider-client tests: a sandbox app served over
real HTTP, clients holding a token, a settable clock, and a recording webhook recipient.

Fixtures come from factories that a test module assigns to the fixture names, e.g.
``app, server = served_app(create_app)``: each module then gets its own module-scoped
server (no ``conftest.py`` here, see the mypy settings), and swaps
``app.state.provider`` per test.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from reconcile.provider import AccountsApi, QrCodeApi, RetryPolicy
from sandbox.accounts import (
    DEFAULT_ACCOUNT_ID,
    DEFAULT_ACCOUNTS_CLIENT_ID,
    DEFAULT_ACCOUNTS_CLIENT_SECRET,
)
from sandbox.defaults import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider


def served_app(create: Callable[[], Starlette]) -> tuple[object, object]:
    """Module fixtures ``app`` (made by ``create``) and ``server`` (``app`` over HTTP)."""

    @pytest.fixture(scope="module")
    def app() -> Starlette:
        return create()

    @pytest.fixture(scope="module")
    def server(app: Starlette) -> Iterator[BackgroundServer]:
        with BackgroundServer(app) as running:
            yield running

    return app, server


@contextlib.contextmanager
def token_client(server: BackgroundServer, client_id: str, secret: str) -> Iterator[httpx.Client]:
    """A client of the QR code API carrying a bearer token of ``client_id``."""
    with httpx.Client(base_url=server.url) as http:
        grant = {"grant_type": "client_credentials"}
        token = http.post("/oauth/token", data=grant, auth=(client_id, secret)).json()
        http.headers["Authorization"] = f"Bearer {token['access_token']}"
        yield http


def token_http_fixture() -> object:
    """Fixture ``http``: a client of ``server`` with the default client's token, taken
    from the test's ``provider``."""

    @pytest.fixture
    def http(server: BackgroundServer, provider: SandboxProvider) -> Iterator[httpx.Client]:
        with token_client(server, DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET) as client:
            yield client

    return http


def qrcode_api(
    server: BackgroundServer,
    sleeps: list[float],
    *,
    client: tuple[str, str] = (DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET),
    **options: Any,
) -> QrCodeApi:
    """A ``QrCodeApi`` of ``server`` whose retries sleep into ``sleeps`` (not really);
    its retry budget's clock moves on by what they would have slept."""

    def clock() -> float:
        return time.monotonic() + sum(sleeps)

    retry = RetryPolicy(
        sleep=sleeps.append, clock=clock, rng=random.Random(0), **options.pop("retry", {})
    )
    return QrCodeApi(server.url, *client, retry=retry, **options)


def accounts_api(
    url: str,
    *,
    client_id: str = DEFAULT_ACCOUNTS_CLIENT_ID,
    client_secret: str = DEFAULT_ACCOUNTS_CLIENT_SECRET,
    account_id: str = DEFAULT_ACCOUNT_ID,
    **options: Any,
) -> AccountsApi:
    """An ``AccountsApi`` of the sandbox accounts app at ``url``, as its default client."""
    return AccountsApi(url, client_id, client_secret, account_id, **options)


def qrcode_api_fixtures() -> tuple[object, object]:
    """Fixtures ``sleeps`` (the retry delays) and ``api`` (a default client's ``QrCodeApi``,
    needing ``server`` and ``provider``)."""

    @pytest.fixture
    def sleeps() -> list[float]:
        return []

    @pytest.fixture
    def api(
        server: BackgroundServer, provider: SandboxProvider, sleeps: list[float]
    ) -> Iterator[QrCodeApi]:
        with qrcode_api(server, sleeps) as client:
            yield client

    return sleeps, api


class FakeClock:
    """A sandbox clock that only moves when told to."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@dataclass(frozen=True)
class Delivery:
    path: str
    headers: dict[str, str]
    body: Any


class Recipient:
    """A stand-in merchant endpoint: records every POST, answers scripted statuses."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.deliveries: list[Delivery] = []
        self.script: deque[int] = deque()
        self.app = Starlette(routes=[Route("/{path:path}", self._handle, methods=["POST"])])

    async def _handle(self, request: Request) -> Response:
        body = json.loads(await request.body())
        with self._lock:
            self.deliveries.append(Delivery(request.url.path, dict(request.headers), body))
            status = self.script.popleft() if self.script else 200
        return Response(status_code=status)

    @property
    def posts(self) -> list[tuple[str, Any]]:
        """``(path, body)`` of every POST."""
        return [(delivery.path, delivery.body) for delivery in self.deliveries]

    def reset(self) -> None:
        with self._lock:
            self.deliveries.clear()
            self.script.clear()

    def pix_ids(self) -> Counter[str]:
        return Counter(p["endToEndId"] for d in self.deliveries for p in d.body["pix"])
