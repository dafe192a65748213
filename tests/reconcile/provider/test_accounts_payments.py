"""AccountsApi money paths: idempotent payouts, balance and statement, pagination."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from starlette.applications import Starlette

from reconcile.provider import (
    AccountsApi,
    InvalidResponse,
    ProviderUnavailable,
    QrCodeApi,
    RetryPolicy,
)
from reconcile.provider.accounts_shapes import walk_pages
from sandbox.accounts import create_accounts_app
from sandbox.app import create_app
from sandbox.defaults import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider
from tests.sandbox.sandbox_support import accounts_api

NO_SLEEP = RetryPolicy(max_attempts=4, sleep=lambda _: None)


@pytest.fixture(scope="module")
def apps() -> tuple[Starlette, Starlette]:
    return create_app(), create_accounts_app()


@pytest.fixture(scope="module")
def servers(apps: tuple[Starlette, Starlette]) -> Iterator[tuple[BackgroundServer, ...]]:
    with BackgroundServer(apps[0]) as qr, BackgroundServer(apps[1]) as accounts:
        yield qr, accounts


@pytest.fixture
def provider(apps: tuple[Starlette, Starlette]) -> SandboxProvider:
    """One provider behind both API families, as at the real provider."""
    fresh = SandboxProvider(seed=9)
    for app in apps:
        app.state.provider = fresh
    return fresh


def _accounts(server: BackgroundServer, **options: Any) -> AccountsApi:
    return accounts_api(server.url, retry=options.pop("retry", NO_SLEEP), **options)


@pytest.fixture
def api(servers: tuple[BackgroundServer, ...]) -> Iterator[AccountsApi]:
    with _accounts(servers[1]) as client:
        yield client


@pytest.mark.usefixtures("provider")
def test_a_payout_is_created_once_whatever_the_repeats(api: AccountsApi) -> None:
    first = api.create_payment("payout-1", Decimal("250.50"), pix_key="f@example.com")
    again = api.create_payment("payout-1", Decimal("250.50"), pix_key="f@example.com")
    assert again == first
    assert first["payment"]["amount"] == Decimal("250.50")
    assert isinstance(first["payment"]["amount"], Decimal)
    assert api.get_payment_by_key("payout-1") == first
    assert api.get_payment(first["endToEndId"]) == first


def test_a_payout_post_is_retried_with_its_key(provider: SandboxProvider, api: AccountsApi) -> None:
    provider.accounts.fail_next(2, status=503)
    payment = api.create_payment("payout-2", Decimal("10.00"), pix_key="f@example.com")
    assert provider.accounts.request_count("POST /pix/payments") == 3
    assert len(provider.accounts.payments) == 1
    assert payment["idempotencyKey"] == "payout-2"


def test_a_lost_answer_to_a_payout_does_not_pay_twice(
    provider: SandboxProvider, servers: tuple[BackgroundServer, ...]
) -> None:
    # The first POST takes effect but answers after the client gave up waiting.
    provider.accounts.delay_next(1, seconds=0.6)
    with _accounts(servers[1], timeout=0.25) as api:
        api.tokens.get()  # fetched first, so the scripted delay hits the POST
        payment = api.create_payment("payout-3", Decimal("10.00"), pix_key="f@example.com")
    assert provider.accounts.request_count("POST /pix/payments") == 2
    assert len(provider.accounts.payments) == 1
    assert provider.accounts.payments.get_by_key("payout-3") is not None
    assert payment["idempotencyKey"] == "payout-3"


def test_other_posts_are_not_retried(provider: SandboxProvider, api: AccountsApi) -> None:
    provider.accounts.fail_next(1, status=503)
    with pytest.raises(ProviderUnavailable):
        api.register_webhook("RECEIVE", "https://m.example/wh", "X-Secret", "s")
    assert provider.accounts.request_count("POST /webhooks/{type}") == 1
    assert provider.accounts.directory.webhooks() == []


def test_lists_are_walked_to_the_end(
    provider: SandboxProvider, servers: tuple[BackgroundServer, ...]
) -> None:
    for n in range(7):
        provider.accounts.add_invoice(Decimal(n + 1))
    with _accounts(servers[1], page_size=3) as api:
        amounts = [i["amount"] for i in api.iter_invoices()]
    assert amounts == [Decimal(n + 1) for n in range(7)]
    assert provider.accounts.request_count("GET /invoices") == 3


def _pages(*bodies: dict[str, Any]) -> Any:
    answers = iter(bodies)

    def get_json(path: str, params: Mapping[str, str | int]) -> dict[str, Any]:
        return next(answers)

    return get_json


def test_page_walk_without_meta_stops_on_a_short_page() -> None:
    get_json = _pages({"data": [{"n": 1}, {"n": 2}]}, {"data": [{"n": 3}]})
    assert [i["n"] for i in walk_pages(get_json, "/x", {}, 2)] == [1, 2, 3]


@pytest.mark.parametrize("body", [{"meta": {}}, {"data": None}, {}])
def test_page_walk_refuses_a_page_without_its_list(body: dict[str, Any]) -> None:
    get_json = _pages({"meta": {"nextPage": 2}, "data": [{"n": 1}]}, body)
    with pytest.raises(InvalidResponse, match="the page has no 'data' list"):
        list(walk_pages(get_json, "/accounts/statement", {}, 1))


def _meta(page: int, last: int, total: int) -> dict[str, Any]:
    """The envelope's ``meta`` as the sandbox (and the provider) sends it."""
    following = page + 1 if page < last else None
    return {"total": total, "currentPage": page, "lastPage": last, "nextPage": following}


def test_page_walk_reads_an_honest_listing_whole_and_an_empty_one_as_empty() -> None:
    get_json = _pages(
        {"meta": _meta(1, 2, 3), "data": [{"n": 1}, {"n": 2}]},
        {"meta": _meta(2, 2, 3), "data": [{"n": 3}]},
    )
    assert [i["n"] for i in walk_pages(get_json, "/x", {}, 2)] == [1, 2, 3]
    assert list(walk_pages(_pages({"meta": _meta(1, 1, 0), "data": []}), "/x", {}, 2)) == []


@pytest.mark.parametrize(
    ("second", "says"),
    [
        ({"meta": _meta(2, 3, 3), "data": []}, "page 2 is empty, and page 3 is said to follow"),
        ({"meta": _meta(2, 2, 3), "data": []}, "1 items on its 2 pages, of the 3 it counts"),
        ({"meta": _meta(1, 2, 3), "data": [{"n": 1}]}, "page 2 came back as page 1"),
    ],
    ids=["empty-page-before-the-last", "fewer-than-counted", "wrong-page"],
)
def test_page_walk_that_cannot_be_whole_fails(second: dict[str, Any], says: str) -> None:
    """A statement page the provider fails to serve whole is no end of the statement."""
    get_json = _pages({"meta": _meta(1, 3, 3), "data": [{"n": 1}]}, second)
    with pytest.raises(InvalidResponse) as raised:
        list(walk_pages(get_json, "/accounts/statement", {}, 1))
    assert says in str(raised.value)


def test_page_walk_refuses_a_next_page_that_does_not_advance() -> None:
    get_json = _pages({"meta": {"nextPage": 1}, "data": [{"n": 1}]})
    with pytest.raises(InvalidResponse):
        list(walk_pages(get_json, "/x", {}, 1))


def test_balance_is_opening_plus_credits_minus_debits(
    provider: SandboxProvider, api: AccountsApi, servers: tuple[BackgroundServer, ...]
) -> None:
    start = datetime.now(UTC) - timedelta(seconds=1)
    accounts = provider.accounts
    accounts.opening_balance = Decimal("1000.00")
    # Credits on the QR code side: Pix received (one refunded in part by the merchant).
    sale = provider.receive_pix(Decimal("300.00"), txid="pedido1")
    provider.receive_pix(Decimal("0.01"))
    provider.refund_pix(sale["endToEndId"], Decimal("30.00"))
    with QrCodeApi(servers[0].url, DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET) as qrcode_api:
        assert qrcode_api.get_pix(sale["endToEndId"])["valor"] == "300.00"
    # Payouts: settled, rejected, settled and returned in part, still processing.
    for key, amount in [("p1", "120.00"), ("p2", "55.55"), ("p3", "80.00"), ("p4", "5.00")]:
        api.create_payment(key, Decimal(amount), pix_key=f"{key}@example.com")
    accounts.settle_payment("p1")
    accounts.reject_payment("p2", "AM02")
    accounts.settle_payment("p3")
    accounts.refund_payment("p3", Decimal("12.34"))
    # A MED case closed with a debit, another closed without.
    agreed = accounts.open_infraction(sale["endToEndId"], Decimal("100.00"))
    accounts.close_infraction(agreed["id"], debit=True)
    disputed = accounts.open_infraction(sale["endToEndId"], Decimal("1.00"))
    accounts.close_infraction(disputed["id"], debit=False)

    credits = Decimal("300.00") + Decimal("0.01") + Decimal("12.34")
    debits = Decimal("30.00") + Decimal("120.00") + Decimal("80.00") + Decimal("100.00")
    balance = api.get_balance()
    assert balance == Decimal("1000.00") + credits - debits == Decimal("982.35")

    lines = list(api.iter_statement(start, datetime.now(UTC) + timedelta(seconds=1)))
    assert all(isinstance(line["amount"], Decimal) for line in lines)
    signed = [line["amount"] if line["type"] == "CREDIT" else -line["amount"] for line in lines]
    assert sum(signed) == balance - accounts.opening_balance
    assert lines[-1]["balanceAfter"] == balance
    assert sorted(line["category"] for line in lines) == sorted(
        ["PIX_RECEIVED"] * 2
        + ["PIX_REFUND_SENT", "PIX_PAYMENT", "PIX_PAYMENT", "PIX_PAYMENT_REFUND"]
        + ["INFRACTION_DEBIT"]
    )
    assert api.get_payment_by_key("p2")["errorCode"] == "AM02"
    assert api.get_payment_by_key("p3")["status"] == "PARTIALLY_REFUNDED"

    closed = list(api.iter_infractions(status="CLOSED"))
    assert [(c["id"], c["debitedAmount"]) for c in closed] == [
        (agreed["id"], Decimal("100.00")),
        (disputed["id"], Decimal("0.00")),
    ]
    assert api.get_infraction(agreed["id"])["endToEndId"] == sale["endToEndId"]


def test_amounts_as_strings_or_numbers_are_exact() -> None:
    from reconcile.provider.accounts_shapes import money

    assert money(Decimal("250.5")) == money("250.50") == Decimal("250.50")
    assert money(7) == Decimal(7)
    for bad in (True, 1.5, "abc", None, "NaN"):
        with pytest.raises(InvalidResponse):
            money(bad)


def test_client_refuses_payouts_it_cannot_express(api: AccountsApi) -> None:
    with pytest.raises(ValueError, match="2 decimal"):
        api.create_payment("k", Decimal("1.001"), pix_key="a")
    with pytest.raises(ValueError, match="positive"):
        api.create_payment("k", 1.5, pix_key="a")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="either"):
        api.create_payment("k", Decimal("1.00"))
    with pytest.raises(ValueError, match="endToEndId"):
        api.get_payment("not/an/e2e")
