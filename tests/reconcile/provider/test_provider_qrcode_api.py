"""``QrCodeApi`` against the sandbox provider over real HTTP."""

from __future__ import annotations

import random
import socket
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from starlette.applications import Starlette

from reconcile.provider import (
    AuthenticationFailed,
    BadRequest,
    Forbidden,
    NotFound,
    ProviderUnavailable,
    QrCodeApi,
    RetryPolicy,
)
from sandbox.app import create_app
from sandbox.defaults import DEFAULT_CLIENT_ID
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider
from tests.sandbox.sandbox_support import qrcode_api, qrcode_api_fixtures, served_app

BASE = datetime(2024, 6, 1, 12, tzinfo=UTC)
DAY_START = datetime(2024, 6, 1, tzinfo=UTC)
DAY_END = datetime(2024, 6, 2, tzinfo=UTC)


app, server = served_app(create_app)
sleeps, api = qrcode_api_fixtures()


@pytest.fixture
def provider(app: Starlette) -> SandboxProvider:
    fresh = SandboxProvider(seed=3)
    fresh.register_client("cob-only", "cob-secret", {"cob.read"})
    app.state.provider = fresh
    return fresh


def _book(provider: SandboxProvider, count: int) -> list[dict[str, Any]]:
    return [
        provider.receive_pix(
            Decimal("1.00") + i, txid=f"tx{i}", horario=BASE + timedelta(seconds=i)
        )
        for i in range(count)
    ]


def test_get_pix_returns_the_pix(api: QrCodeApi, provider: SandboxProvider) -> None:
    [pix] = _book(provider, 1)
    assert api.get_pix(pix["endToEndId"]) == pix


@pytest.mark.usefixtures("provider")
def test_get_unknown_pix_raises_not_found(api: QrCodeApi) -> None:
    with pytest.raises(NotFound) as caught:
        api.get_pix("E00000000202401010000aaaaaaaaaaa")
    assert caught.value.status == 404
    assert caught.value.type == "https://pix.bcb.gov.br/api/v2/error/PixNaoEncontrado"


@pytest.mark.usefixtures("provider")
def test_get_pix_refuses_ids_that_would_change_the_path(api: QrCodeApi) -> None:
    with pytest.raises(ValueError, match="endToEndId"):
        api.get_pix("../oauth/token")


def test_list_walks_every_page(api: QrCodeApi, provider: SandboxProvider) -> None:
    booked = _book(provider, 250)

    listed = list(api.list_received_pix(DAY_START, DAY_END, page_size=100))

    assert listed == booked
    assert provider.request_count("GET /pix") == 3
    assert provider.tokens_issued == 1


def test_list_is_inclusive_and_takes_any_offset(api: QrCodeApi, provider: SandboxProvider) -> None:
    booked = _book(provider, 5)
    brasilia = BASE.astimezone(timezone(timedelta(hours=-3)))

    listed = api.list_received_pix(brasilia + timedelta(seconds=1), brasilia + timedelta(seconds=3))

    assert [p["endToEndId"] for p in listed] == [p["endToEndId"] for p in booked[1:4]]


def test_list_of_nothing_is_one_request(api: QrCodeApi, provider: SandboxProvider) -> None:
    assert list(api.list_received_pix(DAY_START, DAY_END)) == []
    assert provider.request_count("GET /pix") == 1


def test_list_filters_reach_the_provider(api: QrCodeApi, provider: SandboxProvider) -> None:
    with_txid = provider.receive_pix(Decimal("1.00"), txid="abc", horario=BASE)
    without = provider.receive_pix(Decimal("2.00"), payer_cpf="12345678909", horario=BASE)

    assert [p["endToEndId"] for p in api.list_received_pix(DAY_START, DAY_END, txid="abc")] == [
        with_txid["endToEndId"]
    ]
    no_txid = api.list_received_pix(DAY_START, DAY_END, txid_present=False, cpf="12345678909")
    assert [p["endToEndId"] for p in no_txid] == [without["endToEndId"]]


@pytest.mark.usefixtures("provider")
@pytest.mark.parametrize(
    ("inicio", "fim", "page_size"),
    [
        (datetime(2024, 6, 1), DAY_END, 100),  # naive on purpose
        (DAY_END, DAY_START, 100),
        (DAY_START, DAY_END, 0),
        (DAY_START, DAY_END, 1001),
    ],
)
def test_list_refuses_bad_arguments(
    api: QrCodeApi, inicio: datetime, fim: datetime, page_size: int
) -> None:
    with pytest.raises(ValueError, match=r"."):
        list(api.list_received_pix(inicio, fim, page_size))


def test_a_rejected_query_is_bad_request_with_violations(
    api: QrCodeApi, provider: SandboxProvider
) -> None:
    with pytest.raises(BadRequest) as caught:
        list(api.list_received_pix(DAY_START, DAY_END, cpf="123"))
    assert caught.value.status == 400
    assert [v["propriedade"] for v in caught.value.violations] == ["cpf"]
    assert provider.request_count("GET /pix") == 1


def test_wrong_secret_is_authentication_failed(
    server: BackgroundServer, provider: SandboxProvider, sleeps: list[float]
) -> None:
    with (
        qrcode_api(server, sleeps, client=(DEFAULT_CLIENT_ID, "wrong")) as api,
        pytest.raises(AuthenticationFailed) as caught,
    ):
        api.get_pix("E00000000202401010000aaaaaaaaaaa")
    assert caught.value.type == "invalid_client"
    assert provider.request_count("POST /oauth/token") == 1


@pytest.mark.usefixtures("provider")
def test_missing_scope_is_forbidden(server: BackgroundServer, sleeps: list[float]) -> None:
    with qrcode_api(server, sleeps, client=("cob-only", "cob-secret")) as api:
        with pytest.raises(Forbidden) as caught:
            api.get_pix("E00000000202401010000aaaaaaaaaaa")
        assert caught.value.status == 403
    with qrcode_api(server, sleeps, client=("cob-only", "cob-secret"), scopes=["pix.read"]) as api:
        with pytest.raises(Forbidden) as caught:
            api.get_pix("E00000000202401010000aaaaaaaaaaa")
        assert caught.value.type == "invalid_scope"


def test_503_is_retried_honouring_retry_after(
    api: QrCodeApi, provider: SandboxProvider, sleeps: list[float]
) -> None:
    [pix] = _book(provider, 1)
    provider.fail_next(2, status=503, retry_after=0)

    assert api.get_pix(pix["endToEndId"]) == pix
    assert sleeps == [0.0, 0.0]
    assert provider.request_count("GET /pix/{e2eid}") == 3


def test_429_waits_as_long_as_retry_after_says(
    api: QrCodeApi, provider: SandboxProvider, sleeps: list[float]
) -> None:
    [pix] = _book(provider, 1)
    provider.fail_next(1, status=429, retry_after=3)
    assert api.get_pix(pix["endToEndId"]) == pix
    assert sleeps == [3.0]


def test_without_retry_after_backoff_grows_with_jitter(
    api: QrCodeApi, provider: SandboxProvider, sleeps: list[float]
) -> None:
    [pix] = _book(provider, 1)
    provider.fail_next(3, status=500)
    assert api.get_pix(pix["endToEndId"]) == pix
    assert len(sleeps) == 3
    for delay, ceiling in zip(sleeps, (0.5, 1.0, 2.0), strict=True):
        assert ceiling / 2 <= delay <= ceiling


def test_retries_are_bounded(
    api: QrCodeApi, provider: SandboxProvider, sleeps: list[float]
) -> None:
    provider.fail_next(10, status=503, retry_after=0)
    with pytest.raises(ProviderUnavailable) as caught:
        list(api.list_received_pix(DAY_START, DAY_END))
    assert caught.value.status == 503
    assert caught.value.retry_after == 0
    assert provider.request_count("GET /pix") == 4
    assert len(sleeps) == 3


def test_a_long_retry_after_is_left_to_the_caller(
    api: QrCodeApi, provider: SandboxProvider, sleeps: list[float]
) -> None:
    provider.fail_next(1, status=503, retry_after=120)
    with pytest.raises(ProviderUnavailable) as caught:
        api.get_pix("E00000000202401010000aaaaaaaaaaa")
    assert caught.value.retry_after == 120
    assert sleeps == []


def test_a_read_timeout_is_retried(
    server: BackgroundServer, provider: SandboxProvider, sleeps: list[float]
) -> None:
    [pix] = _book(provider, 1)
    provider.delay_next(1, seconds=0.5)
    with qrcode_api(server, sleeps, timeout=0.2) as api:
        api.tokens.get()  # so the slow answer is the Pix look-up, not the token
        assert api.get_pix(pix["endToEndId"]) == pix
    assert len(sleeps) == 1


def test_a_failing_token_endpoint_is_retried(
    api: QrCodeApi, provider: SandboxProvider, sleeps: list[float]
) -> None:
    [pix] = _book(provider, 1)
    provider.fail_next(1, status=503, retry_after=0, endpoint="token")
    assert api.get_pix(pix["endToEndId"]) == pix
    assert provider.request_count("POST /oauth/token") == 2
    assert sleeps == [0.0]


def test_connection_refused_is_provider_unavailable(sleeps: list[float]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    retry = RetryPolicy(sleep=sleeps.append, rng=random.Random(0), max_attempts=2)
    with (
        QrCodeApi(f"http://127.0.0.1:{port}", "id", "secret", retry=retry) as api,
        pytest.raises(ProviderUnavailable, match="ConnectError"),
    ):
        api.get_pix("E00000000202401010000aaaaaaaaaaa")
    assert len(sleeps) == 1


def test_a_budget_rides_out_minutes_of_throttling_then_gives_up(
    server: BackgroundServer, provider: SandboxProvider
) -> None:
    """What the nightly run and the jobs get from settings (``RetryPolicy.within``): not
    four tries but as many as the budget's waiting allows, Retry-After the least wait."""
    waited: list[float] = []
    budget = {"max_attempts": 1_000_000, "max_delay": 30, "max_retry_after": 120, "budget": 300}
    with qrcode_api(server, waited, retry=budget) as api:
        [pix] = _book(provider, 1)
        # Four minutes of 429 with Retry-After: 20 (twelve answers), then an answer.
        provider.fail_next(12, status=429, retry_after=20)
        assert api.get_pix(pix["endToEndId"]) == pix
        assert len(waited) == 12
        assert min(waited) >= 20
        assert 240 <= sum(waited) <= 300
        # Longer than the budget: the provider's error, after no more than the budget.
        waited.clear()
        provider.fail_next(100, status=503)
        with pytest.raises(ProviderUnavailable):
            api.get_pix(pix["endToEndId"])
        assert 4 < len(waited) < 100
        assert sum(waited) <= 300
        provider.faults.clear()
        # A Retry-After beyond the cap is not slept on: the job tries again next time.
        waited.clear()
        provider.fail_next(1, status=429, retry_after=600)
        with pytest.raises(ProviderUnavailable) as caught:
            api.get_pix(pix["endToEndId"])
        assert caught.value.retry_after == 600
        assert waited == []
