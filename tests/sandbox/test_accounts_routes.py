"""The sandbox accounts API over real HTTP: OAuth, headers, problems, payouts, lists."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from sandbox.accounts import (
    DEFAULT_ACCOUNT_ID,
    DEFAULT_ACCOUNTS_CLIENT_ID,
    DEFAULT_ACCOUNTS_CLIENT_SECRET,
    create_accounts_app,
)
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider
from tests.sandbox.sandbox_support import served_app

CREDENTIALS = (DEFAULT_ACCOUNTS_CLIENT_ID, DEFAULT_ACCOUNTS_CLIENT_SECRET)


app, server = served_app(create_accounts_app)


@pytest.fixture
def provider(app: Starlette) -> SandboxProvider:
    fresh = SandboxProvider(seed=11)
    app.state.provider = fresh
    return fresh


@pytest.fixture
def http(server: BackgroundServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=5) as client:
        yield client


def _token(http: httpx.Client) -> str:
    answer = http.post("/oauth/token", data={"grant_type": "client_credentials"}, auth=CREDENTIALS)
    assert answer.status_code == 200, answer.text
    return str(answer.json()["accessToken"])


@pytest.fixture
def authed(provider: SandboxProvider, http: httpx.Client) -> httpx.Client:
    http.headers["Authorization"] = f"Bearer {_token(http)}"
    http.headers["x-account-id"] = DEFAULT_ACCOUNT_ID
    return http


def _decimal_json(response: httpx.Response) -> Any:
    return json.loads(response.content, parse_float=Decimal)


def _payout(key: str, amount: str = "250.50", **extra: Any) -> dict[str, Any]:
    return {"idempotencyKey": key, "payment": {"currency": "BRL", "amount": amount}} | (
        extra or {"pixKey": "fornecedor@example.com"}
    )


# -- OAuth -------------------------------------------------------------------------------


@pytest.mark.parametrize(("unit", "scale"), [("ms", 1000), ("s", 1)])
def test_token_answers_the_providers_spelling(
    provider: SandboxProvider, http: httpx.Client, unit: str, scale: int
) -> None:
    provider.accounts.expires_at_unit = unit  # type: ignore[assignment]
    before = time.time()
    body = http.post(
        "/oauth/token", data={"grant_type": "client_credentials"}, auth=CREDENTIALS
    ).json()
    assert set(body) == {"accessToken", "tokenType", "expiresAt"}
    assert body["tokenType"] == "Bearer"
    assert isinstance(body["expiresAt"], int)
    lifetime = body["expiresAt"] / scale - before
    assert 298 < lifetime < 301


@pytest.mark.usefixtures("provider")
def test_token_accepts_json_form_and_basic_credentials(http: httpx.Client) -> None:
    client_id, secret = CREDENTIALS
    as_json = {"clientId": client_id, "clientSecret": secret, "grantType": "client_credentials"}
    assert http.post("/oauth/token", json=as_json).status_code == 200
    form = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret}
    assert http.post("/oauth/token", data=form).status_code == 200
    wrong = http.post("/oauth/token", json={"clientId": client_id, "clientSecret": "nope"})
    assert wrong.status_code == 401
    assert wrong.json()["type"] == "onz-9001"
    assert wrong.headers["content-type"] == "application/problem+json"


def test_token_endpoint_is_rate_limited_per_client(
    provider: SandboxProvider, http: httpx.Client
) -> None:
    provider.accounts.tokens.rate_limit = 2
    provider.accounts.tokens.rate_window_seconds = 60
    for _ in range(2):
        _token(http)
    refused = http.post("/oauth/token", data={"grant_type": "client_credentials"}, auth=CREDENTIALS)
    assert refused.status_code == 429
    assert refused.json()["type"] == "onz-9429"
    assert 59 <= int(refused.headers["retry-after"]) <= 60
    assert provider.accounts.tokens.issued_count == 2


def test_a_qr_code_token_is_not_an_accounts_token(
    provider: SandboxProvider, http: httpx.Client
) -> None:
    from sandbox.defaults import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET

    refused = http.post(
        "/oauth/token",
        data={"grant_type": "client_credentials"},
        auth=(DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET),
    )
    assert refused.status_code == 401
    assert provider.accounts.request_count("POST /oauth/token") == 1


# -- Authentication and account header --------------------------------------------------


def test_expired_and_unknown_tokens_have_their_own_codes(
    provider: SandboxProvider, authed: httpx.Client
) -> None:
    assert authed.get("/accounts/balances").status_code == 200
    provider.accounts.expire_tokens()
    expired = authed.get("/accounts/balances")
    assert (expired.status_code, expired.json()["type"]) == (401, "onz-0018")
    unknown = authed.get("/accounts/balances", headers={"Authorization": "Bearer nope"})
    assert (unknown.status_code, unknown.json()["type"]) == (401, "onz-9401")
    missing = authed.get("/accounts/balances", headers={"Authorization": ""})
    assert (missing.status_code, missing.json()["type"]) == (401, "onz-9401")


def test_x_account_id_is_required_and_must_be_the_tokens_account(
    provider: SandboxProvider, authed: httpx.Client
) -> None:
    del authed.headers["x-account-id"]
    missing = authed.get("/accounts/balances")
    assert (missing.status_code, missing.json()["type"]) == (400, "onz-9402")
    other = authed.get("/accounts/balances", headers={"x-account-id": "someone-else"})
    assert (other.status_code, other.json()["type"]) == (403, "onz-9403")

    # A client registered for another account may not read this one.
    provider.accounts.register_client("other", "other-secret", ["another-account"])
    token = authed.post(
        "/oauth/token", data={"grant_type": "client_credentials"}, auth=("other", "other-secret")
    ).json()["accessToken"]
    foreign = authed.get(
        "/accounts/balances",
        headers={"Authorization": f"Bearer {token}", "x-account-id": DEFAULT_ACCOUNT_ID},
    )
    assert (foreign.status_code, foreign.json()["type"]) == (403, "onz-9403")


def test_scripted_faults_carry_retry_after(provider: SandboxProvider, authed: httpx.Client) -> None:
    provider.accounts.fail_next(1, status=503, retry_after=2)
    failed = authed.get("/accounts/balances")
    assert (failed.status_code, failed.json()["type"]) == (503, "onz-9503")
    assert failed.headers["retry-after"] == "2"
    assert authed.get("/accounts/balances").status_code == 200
    # The QR code side's fault queue is separate.
    assert provider.faults.pending("api") == 0  # type: ignore[arg-type]


# -- Payouts -----------------------------------------------------------------------------


def test_a_repeated_idempotency_key_returns_the_same_payment(
    provider: SandboxProvider, authed: httpx.Client
) -> None:
    first = authed.post("/pix/payments", json=_payout("payout-1"))
    assert first.status_code == 201
    again = authed.post("/pix/payments", json=_payout("payout-1"))
    assert again.status_code == 200
    assert again.json() == first.json()
    assert len(provider.accounts.payments) == 1

    payment = _decimal_json(first)
    assert payment["status"] == "PROCESSING"
    assert payment["payment"] == {"currency": "BRL", "amount": Decimal("250.50")}
    assert b'"amount":250.50' in first.content  # a JSON number, written exactly
    assert payment["debtorAccount"]["ispb"] == provider.ispb
    assert len(payment["endToEndId"]) == 32


def test_an_idempotency_key_reused_for_another_payment_is_a_conflict(
    provider: SandboxProvider, authed: httpx.Client
) -> None:
    authed.post("/pix/payments", json=_payout("payout-1"))
    conflict = authed.post("/pix/payments", json=_payout("payout-1", "999.00"))
    assert (conflict.status_code, conflict.json()["type"]) == (409, "onz-9409")
    assert len(provider.accounts.payments) == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"payment": {"amount": "1.00"}, "pixKey": "k"}, "idempotencyKey"),
        ({"idempotencyKey": "a/b", "amount": "1.00", "pixKey": "k"}, "idempotencyKey"),
        ({"idempotencyKey": "k1", "amount": "1.001", "pixKey": "k"}, "payment.amount"),
        ({"idempotencyKey": "k1", "amount": -1, "pixKey": "k"}, "payment.amount"),
        ({"idempotencyKey": "k1", "amount": "1.00"}, "pixKey"),
        ({"idempotencyKey": "k1", "amount": "1.00", "creditorAccount": {}}, "creditorAccount.ispb"),
    ],
)
@pytest.mark.usefixtures("provider")
def test_invalid_payouts_are_problems_with_violations(
    authed: httpx.Client, body: dict[str, Any], field: str
) -> None:
    answer = authed.post("/pix/payments", json=body)
    assert answer.status_code == 400
    problem = answer.json()
    assert problem["type"] == "onz-9400"
    assert field in [v["field"] for v in problem["violations"]]


def test_payout_look_ups_and_life_cycle(provider: SandboxProvider, authed: httpx.Client) -> None:
    account = {"ispb": "12345678", "issuer": "0001", "number": "42", "accountType": "CACC"}
    created = authed.post("/pix/payments", json=_payout("p-2", "100", creditorAccount=account))
    e2e = created.json()["endToEndId"]
    assert created.json()["localInstrument"] == "MANU"
    provider.accounts.settle_payment("p-2")
    provider.accounts.refund_payment("p-2", Decimal("40.00"))
    by_e2e = _decimal_json(authed.get(f"/pix/payments/{e2e}"))
    by_key = _decimal_json(authed.get("/pix/payments/idempotencyKey/p-2"))
    assert by_e2e == by_key
    assert by_key["status"] == "PARTIALLY_REFUNDED"
    assert by_key["refunds"][0]["pixRefundAmount"] == Decimal("40.00")
    with pytest.raises(ValueError, match="exceed"):
        provider.accounts.refund_payment("p-2", Decimal("60.01"))
    provider.accounts.refund_payment("p-2", Decimal("60.00"))
    assert authed.get(f"/pix/payments/{e2e}").json()["status"] == "REFUNDED"

    missing = authed.get("/pix/payments/idempotencyKey/unknown")
    assert (missing.status_code, missing.json()["type"]) == (404, "onz-9404")


def test_rejected_payout_carries_the_spi_code(
    provider: SandboxProvider, authed: httpx.Client
) -> None:
    authed.post("/pix/payments", json=_payout("p-3"))
    provider.accounts.reject_payment("p-3", "AM02")
    payment = authed.get("/pix/payments/idempotencyKey/p-3").json()
    assert (payment["status"], payment["errorCode"]) == ("REJECTED", "AM02")
    with pytest.raises(ValueError, match="REJECTED"):
        provider.accounts.settle_payment("p-3")


# -- Lists -------------------------------------------------------------------------------


def test_lists_carry_meta_pagination(provider: SandboxProvider, authed: httpx.Client) -> None:
    for n in range(5):
        provider.accounts.add_customer(f"Cliente {n}", f"{n:011d}")
    first = authed.get("/customers", params={"perPage": 2}).json()
    assert first["meta"] == {
        "total": 5,
        "perPage": 2,
        "currentPage": 1,
        "firstPage": 1,
        "lastPage": 3,
        "nextPage": 2,
        "prevPage": None,
    }
    last = authed.get("/customers", params={"perPage": 2, "page": 3}).json()
    assert (last["meta"]["nextPage"], last["meta"]["prevPage"]) == (None, 2)
    assert [c["name"] for c in last["data"]] == ["Cliente 4"]
    bad = authed.get("/customers", params={"perPage": 0})
    assert (bad.status_code, bad.json()["violations"][0]["field"]) == (400, "perPage")


def test_statement_needs_a_window(authed: httpx.Client, provider: SandboxProvider) -> None:
    answer = authed.get("/accounts/statement")
    assert answer.status_code == 400
    assert {v["field"] for v in answer.json()["violations"]} == {"start", "end"}
    provider.receive_pix(Decimal("10.00"), txid="abc123")
    now = datetime.now(UTC)
    window = {"start": (now - timedelta(hours=1)).isoformat(), "end": now.isoformat()}
    lines = _decimal_json(authed.get("/accounts/statement", params=window))["data"]
    assert [(line["type"], line["amount"], line["txId"]) for line in lines] == [
        ("CREDIT", Decimal("10.00"), "abc123")
    ]


def test_infractions_invoices_and_webhooks(provider: SandboxProvider, authed: httpx.Client) -> None:
    pix = provider.receive_pix(Decimal("300.00"))
    case = provider.accounts.open_infraction(pix["endToEndId"], Decimal("300.00"))
    listed = _decimal_json(authed.get("/infractions", params={"status": "OPEN"}))
    assert [c["id"] for c in listed["data"]] == [case["id"]]
    fetched = _decimal_json(authed.get(f"/infractions/{case['id']}"))
    assert (fetched["endToEndId"], fetched["amount"]) == (pix["endToEndId"], Decimal("300.00"))
    assert authed.get("/infractions/inf-none").status_code == 404
    with pytest.raises(KeyError):
        provider.accounts.open_infraction("E" + "0" * 31, Decimal("1.00"))

    provider.accounts.add_invoice(Decimal("10.00"), status="PAID")
    assert _decimal_json(authed.get("/invoices"))["data"][0]["amount"] == Decimal("10.00")

    registration = {
        "url": "https://merchant.example/webhooks/accounts",
        "secretHeader": {"name": "X-Webhook-Secret", "value": "s3cret"},
    }
    created = authed.post("/webhooks/transfer", json=registration)
    assert created.status_code == 201
    assert "s3cret" not in created.text
    listed_hooks = authed.get("/webhooks").json()["data"]
    assert [(w["type"], w["url"]) for w in listed_hooks] == [("TRANSFER", registration["url"])]
    stored = provider.accounts.directory.webhook("TRANSFER")
    assert stored is not None
    assert stored.secret_header_value == "s3cret"
    assert authed.post("/webhooks/crypto", json=registration).status_code == 404
    invalid = authed.post("/webhooks/receive", json={"url": "ftp://x"})
    assert invalid.status_code == 400


@pytest.mark.usefixtures("provider")
def test_unknown_paths_answer_problems(http: httpx.Client) -> None:
    answer = http.get("/nowhere")
    assert (answer.status_code, answer.json()["type"]) == (404, "onz-9404")
    assert answer.headers["content-type"] == "application/problem+json"
    wrong_method = http.delete("/pix/payments")
    assert (wrong_method.status_code, wrong_method.headers["allow"]) == (405, "POST")
