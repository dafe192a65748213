"""The token cache: caching, proactive refresh, refresh on 401, response variants."""

from __future__ import annotations

import itertools
import json
import random
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from reconcile.provider import (
    AuthenticationFailed,
    InvalidResponse,
    QrCodeApi,
    RetryPolicy,
    TokenCache,
)
from sandbox.app import create_app
from sandbox.defaults import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider
from tests.sandbox.sandbox_support import served_app

E2EID = "E00000000202401010000aaaaaaaaaaa"
NOW = 1_700_000_000.0  # the fake wall clock, epoch seconds


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


app, server = served_app(create_app)


@pytest.fixture
def provider(app: Starlette) -> SandboxProvider:
    fresh = SandboxProvider(seed=6)
    app.state.provider = fresh
    return fresh


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5) as client:
        yield client


def _cache(
    http: httpx.Client, url: str, clock: FakeClock | None = None, **options: Any
) -> TokenCache:
    return TokenCache(
        http,
        url + "/oauth/token",
        options.pop("client_id", DEFAULT_CLIENT_ID),
        options.pop("client_secret", DEFAULT_CLIENT_SECRET),
        clock=clock or FakeClock(),
        wall_clock=lambda: NOW,
        **options,
    )


def test_one_token_serves_many_requests(
    server: BackgroundServer, provider: SandboxProvider
) -> None:
    pix = provider.receive_pix(Decimal("1.00"))
    with QrCodeApi(server.url, DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET) as api:
        for _ in range(10):
            assert api.get_pix(pix["endToEndId"]) == pix
        assert api.tokens.fetch_count == 1
    assert provider.tokens_issued == 1


@pytest.mark.usefixtures("provider")
def test_token_is_refreshed_a_margin_before_it_expires(
    server: BackgroundServer, http: httpx.Client
) -> None:
    clock = FakeClock()
    cache = _cache(http, server.url, clock, refresh_margin=30)
    first = cache.get()

    clock.now = 269.9  # the sandbox's tokens live 300 s
    assert cache.get() == first
    clock.now = 270.0
    assert cache.get() != first
    assert cache.fetch_count == 2


@pytest.mark.usefixtures("provider")
def test_short_lived_tokens_keep_half_their_life(
    server: BackgroundServer, provider: SandboxProvider, http: httpx.Client
) -> None:
    provider.token_lifetime_seconds = 1
    clock = FakeClock()
    cache = _cache(http, server.url, clock, refresh_margin=30)
    first = cache.get()
    clock.now = 0.49
    assert cache.get() == first
    clock.now = 0.5
    assert cache.get() != first


def test_a_401_refreshes_the_token_once(
    server: BackgroundServer, provider: SandboxProvider
) -> None:
    pix = provider.receive_pix(Decimal("1.00"))
    with QrCodeApi(server.url, DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET) as api:
        api.get_pix(pix["endToEndId"])
        provider.expire_tokens()

        assert api.get_pix(pix["endToEndId"]) == pix

    assert provider.tokens_issued == 2
    assert provider.request_count("GET /pix/{e2eid}") == 3


def test_a_401_that_a_new_token_does_not_cure_is_authentication_failed(
    server: BackgroundServer, app: Starlette
) -> None:
    # A sandbox clock that leaps an hour on every reading: each token is dead on arrival.
    start = datetime(2024, 1, 1, tzinfo=UTC)
    readings = itertools.count()
    provider = SandboxProvider(clock=lambda: start + timedelta(hours=next(readings)))
    app.state.provider = provider
    retry = RetryPolicy(sleep=lambda _: None, rng=random.Random(0))
    with (
        QrCodeApi(server.url, DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, retry=retry) as api,
        pytest.raises(AuthenticationFailed) as caught,
    ):
        api.get_pix(E2EID)
    assert caught.value.status == 401
    assert provider.tokens_issued == 2


@pytest.mark.usefixtures("provider")
def test_credentials_in_the_form_body(server: BackgroundServer, http: httpx.Client) -> None:
    assert _cache(http, server.url, auth_style="body").get()


def test_concurrent_callers_share_one_fetch(
    server: BackgroundServer, provider: SandboxProvider, http: httpx.Client
) -> None:
    provider.delay_next(1, seconds=0.2, endpoint="token")
    cache = _cache(http, server.url)
    tokens: list[str] = []
    threads = [threading.Thread(target=lambda: tokens.append(cache.get())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(set(tokens)) == 1
    assert len(tokens) == 8
    assert provider.tokens_issued == 1


class FakeProvider:
    """A provider whose token and Pix answers are set by the test, byte for byte."""

    def __init__(self) -> None:
        self.token_body: dict[str, Any] = {}
        self.pix_body = b"{}"
        self.app = Starlette(
            routes=[
                Route("/oauth/token", self._token, methods=["POST"]),
                Route("/pix/{e2eid}", self._pix, methods=["GET"]),
            ]
        )

    async def _token(self, request: Request) -> Response:
        return Response(json.dumps(self.token_body), media_type="application/json")

    async def _pix(self, request: Request) -> Response:
        return Response(self.pix_body, media_type="application/json")


@pytest.fixture(scope="module")
def fake_server() -> Iterator[tuple[FakeProvider, BackgroundServer]]:
    fake = FakeProvider()
    with BackgroundServer(fake.app) as server:
        yield fake, server


@pytest.mark.parametrize(
    "body",
    [
        {"access_token": "t", "expires_in": 60},
        {"access_token": "t", "expires_in": "60"},
        {"accessToken": "t", "expiresIn": 60},
        {"accessToken": "t", "expiresAt": NOW + 60},
        {"accessToken": "t", "expiresAt": int((NOW + 60) * 1000)},
        {"accessToken": "t", "expiresAt": "2023-11-14T22:14:20Z"},  # NOW + 60
    ],
    ids=["expires_in", "expires_in-str", "camel", "at-seconds", "at-millis", "at-iso"],
)
def test_token_response_variants(
    fake_server: tuple[FakeProvider, BackgroundServer], http: httpx.Client, body: dict[str, Any]
) -> None:
    fake, server = fake_server
    fake.token_body = body
    clock = FakeClock()
    cache = _cache(http, server.url, clock, refresh_margin=10)

    assert cache.get() == "t"
    clock.now = 49.9
    cache.get()
    assert cache.fetch_count == 1
    clock.now = 50.0
    cache.get()
    assert cache.fetch_count == 2


def test_a_token_response_without_a_token_is_invalid(
    fake_server: tuple[FakeProvider, BackgroundServer], http: httpx.Client
) -> None:
    fake, server = fake_server
    fake.token_body = {"token_type": "Bearer"}
    with pytest.raises(InvalidResponse):
        _cache(http, server.url).get()


def test_amounts_sent_as_numbers_stay_exact(
    fake_server: tuple[FakeProvider, BackgroundServer],
) -> None:
    fake, server = fake_server
    fake.token_body = {"access_token": "t", "expires_in": 60}
    fake.pix_body = b'{"endToEndId": "%s", "valor": 1234567890.10, "horario": "x"}' % (
        E2EID.encode()
    )
    with QrCodeApi(server.url, "id", "secret") as api:
        pix = api.get_pix(E2EID)
    assert pix["valor"] == Decimal("1234567890.10")
    assert str(pix["valor"]) == "1234567890.10"
