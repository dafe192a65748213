"""AccountsApi against the sandbox: tokens, rate limits, account header, retries, errors."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from reconcile.provider import (
    AccountsApi,
    AuthenticationFailed,
    BadRequest,
    Forbidden,
    IdempotencyConflict,
    NotFound,
    ProviderUnavailable,
    RetryPolicy,
)
from sandbox.accounts import create_accounts_app
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider
from tests.sandbox.sandbox_support import accounts_api, served_app


class FakeTime:
    """One clock for both sides: the client's monotonic clock, its sleep, and the sandbox."""

    def __init__(self) -> None:
        self.elapsed = 0.0
        self.sleeps: list[float] = []
        self._start = datetime.now(UTC)

    def monotonic(self) -> float:
        return self.elapsed

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.elapsed += seconds

    def sandbox_now(self) -> datetime:
        return self._start + timedelta(seconds=self.elapsed)


app, server = served_app(create_accounts_app)


@pytest.fixture
def fake_time() -> FakeTime:
    return FakeTime()


@pytest.fixture
def provider(app: Starlette, fake_time: FakeTime) -> SandboxProvider:
    fresh = SandboxProvider(seed=5, clock=fake_time.sandbox_now)
    app.state.provider = fresh
    return fresh


def _api(server: BackgroundServer, fake_time: FakeTime, **options: Any) -> AccountsApi:
    retry = options.pop("retry", None) or RetryPolicy(
        max_attempts=6, max_retry_after=120, sleep=fake_time.sleep
    )
    return accounts_api(server.url, retry=retry, clock=fake_time.monotonic, **options)


@pytest.fixture
def api(server: BackgroundServer, fake_time: FakeTime) -> Iterator[AccountsApi]:
    with _api(server, fake_time) as client:
        yield client


@pytest.mark.parametrize("unit", ["ms", "s"])
def test_expires_at_in_ms_or_s_gives_the_same_refresh_time(
    provider: SandboxProvider, api: AccountsApi, fake_time: FakeTime, unit: str
) -> None:
    provider.accounts.expires_at_unit = unit  # type: ignore[assignment]
    api.get_balance()
    fake_time.elapsed = 265.0  # tokens live 300 s; the client refreshes 30 s early
    api.get_balance()
    assert api.tokens.fetch_count == 1
    fake_time.elapsed = 271.0
    api.get_balance()
    assert api.tokens.fetch_count == 2


def test_expired_token_onz_0018_is_refreshed_once(
    provider: SandboxProvider, api: AccountsApi
) -> None:
    assert api.get_balance() == Decimal("0.00")
    provider.accounts.expire_tokens()
    assert api.get_balance() == Decimal("0.00")
    assert provider.accounts.tokens.issued_count == 2
    assert provider.accounts.request_count("GET /accounts/balances") == 3


def test_token_rate_limit_is_waited_out_per_retry_after(
    provider: SandboxProvider, api: AccountsApi, fake_time: FakeTime
) -> None:
    provider.accounts.tokens.rate_limit = 1
    provider.accounts.tokens.rate_window_seconds = 60
    api.get_balance()
    fake_time.elapsed = 10.0
    provider.accounts.expire_tokens()
    api.get_balance()  # 401 onz-0018 → token endpoint 429, Retry-After 50 → wait → token
    assert fake_time.sleeps == [50.0]
    assert provider.accounts.request_count("POST /oauth/token") == 3
    assert provider.accounts.tokens.issued_count == 2


def test_a_long_retry_after_goes_up_and_the_endpoint_is_left_alone(
    provider: SandboxProvider, server: BackgroundServer, fake_time: FakeTime
) -> None:
    provider.accounts.tokens.rate_limit = 1
    retry = RetryPolicy(max_retry_after=10, sleep=fake_time.sleep)
    with _api(server, fake_time, retry=retry) as api:
        api.get_balance()
        provider.accounts.expire_tokens()
        with pytest.raises(ProviderUnavailable) as caught:
            api.get_balance()
        assert caught.value.retry_after == 60
        fake_time.elapsed = 30.0
        with pytest.raises(ProviderUnavailable) as again:
            api.get_balance()
        # Still inside the window: the client did not even ask the token endpoint.
        assert again.value.retry_after == pytest.approx(30.0)
        assert provider.accounts.request_count("POST /oauth/token") == 2
        fake_time.elapsed = 61.0
        api.get_balance()
    assert fake_time.sleeps == []


def test_x_account_id_goes_on_every_call(
    provider: SandboxProvider, server: BackgroundServer, fake_time: FakeTime
) -> None:
    with _api(server, fake_time, account_id="someone-else") as wrong, pytest.raises(Forbidden):
        wrong.get_balance()
    with _api(server, fake_time) as right:
        right.get_balance()
        list(right.iter_invoices())
        right.register_webhook("TRANSFER", "https://m.example/wh", "X-Secret", "s")
    assert provider.accounts.request_count("GET /accounts/balances") == 2


def test_bursts_of_429_and_503_are_survived(
    provider: SandboxProvider, api: AccountsApi, fake_time: FakeTime
) -> None:
    provider.accounts.fail_next(1, status=503, retry_after=0, endpoint="token")
    provider.accounts.fail_next(2, status=503)
    provider.accounts.fail_next(1, status=429, retry_after=3)
    assert api.get_balance() == Decimal("0.00")
    assert len(fake_time.sleeps) == 4
    assert fake_time.sleeps[0] == 0
    assert fake_time.sleeps[-1] == 3
    assert provider.accounts.request_count("GET /accounts/balances") == 4


def test_typed_errors_for_each_problem(
    provider: SandboxProvider, server: BackgroundServer, api: AccountsApi, fake_time: FakeTime
) -> None:
    with pytest.raises(NotFound) as missing:
        api.get_payment_by_key("never-created")
    assert missing.value.type == "onz-9404"
    with pytest.raises(NotFound):
        api.get_payment("E" + "1" * 31)
    with pytest.raises(NotFound):
        api.get_infraction("inf-000404")
    bad_account = {"ispb": "123", "number": "1"}
    with pytest.raises(BadRequest) as invalid:
        api.create_payment("k-1", Decimal("1.00"), creditor_account=bad_account)
    assert [v["field"] for v in invalid.value.violations] == ["creditorAccount.ispb"]
    api.create_payment("k-2", Decimal("1.00"), pix_key="a@example.com")
    with pytest.raises(IdempotencyConflict) as conflict:
        api.create_payment("k-2", Decimal("2.00"), pix_key="a@example.com")
    assert (conflict.value.status, conflict.value.type) == (409, "onz-9409")
    provider.accounts.fail_next(10, status=503)
    with pytest.raises(ProviderUnavailable):
        api.get_balance()
    provider.accounts.faults.clear()
    with (
        _api(server, fake_time, client_secret="wrong") as stranger,
        pytest.raises(AuthenticationFailed) as refused,
    ):
        stranger.get_balance()
    assert refused.value.type == "onz-9001"


def test_expired_token_code_refreshes_whatever_its_status(fake_time: FakeTime) -> None:
    """Some gateways send the provider's expired-token code with 403; refresh anyway."""
    tokens = itertools.count(1)
    seen: list[str] = []

    async def token(request: Request) -> Response:
        return JSONResponse({"access_token": f"t{next(tokens)}", "expires_in": 300})

    async def balance(request: Request) -> Response:
        seen.append(request.headers["authorization"])
        if len(seen) == 1:
            return JSONResponse({"type": "onz-0018", "status": 403}, status_code=403)
        return JSONResponse({"available": 1.5})

    stub = Starlette(
        routes=[
            Route("/oauth/token", token, methods=["POST"]),
            Route("/accounts/balances", balance),
        ]
    )
    with BackgroundServer(stub) as server, _api(server, fake_time) as api:
        assert api.get_balance() == Decimal("1.5")
    assert seen == ["Bearer t1", "Bearer t2"]


def _requests(api: str, endpoint: str, status: str) -> float:
    from prometheus_client import REGISTRY

    found = REGISTRY.get_sample_value(
        "pixrecon_provider_requests_total", {"api": api, "endpoint": endpoint, "status": status}
    )
    return found or 0.0


def test_token_fetches_are_counted_like_every_request(
    provider: SandboxProvider, server: BackgroundServer, fake_time: FakeTime
) -> None:
    """A revoked secret or a provider that is down fails at the token endpoint first: the
    alerts on refused credentials and provider errors read these series."""
    refused = _requests("accounts", "/oauth/token", "401")
    with (
        _api(server, fake_time, client_secret="revoked") as stranger,
        pytest.raises(AuthenticationFailed),
    ):
        stranger.get_balance()
    assert _requests("accounts", "/oauth/token", "401") == refused + 1
    unreachable = _requests("accounts", "/oauth/token", "error")
    with (
        accounts_api(
            "http://127.0.0.1:9", retry=RetryPolicy(max_attempts=1), clock=fake_time.monotonic
        ) as nowhere,
        pytest.raises(ProviderUnavailable),
    ):
        nowhere.get_balance()
    assert _requests("accounts", "/oauth/token", "error") == unreachable + 1


def test_a_payout_looked_up_by_its_key_is_counted_under_the_template(
    provider: SandboxProvider, api: AccountsApi
) -> None:
    """A merchant's idempotency key of plain words (``po-supplier``) is an id all the
    same: no series per payout."""
    template = "/pix/payments/idempotencyKey/{id}"
    before = _requests("accounts", template, "404")
    with pytest.raises(NotFound):
        api.get_payment_by_key("po-supplier")
    assert _requests("accounts", template, "404") == before + 1
    assert _requests("accounts", "/pix/payments/{id}/po-supplier", "404") == 0
