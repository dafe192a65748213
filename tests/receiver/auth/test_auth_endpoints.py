"""Authentication through the running receiver: real HTTP on loopback, and refused
deliveries leave no delivery and no inbox item behind."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine, select

from reconcile.db import session_scope
from reconcile.models import WebhookDelivery
from tests.factories import e2e_id, pix
from tests.receiver.auth.auth_support import (
    ACCOUNTS_PATH,
    PIX_PATH,
    serve_node,
    settings_for,
    sqlite_engine,
    standard_signature,
    stored_counts,
)

OLD, NEW = "rotating-out-secret", "rotating-in-secret"
HMAC_KEY = "whsec_" + base64.b64encode(b"accounts api signing key 0001").decode()


@pytest.fixture
def auth_engine(sqlite_template: Path, tmp_path: Path) -> Iterator[Engine]:
    with sqlite_engine(sqlite_template, tmp_path) as engine:
        yield engine


def pix_body() -> bytes:
    return json.dumps({"pix": [pix()]}).encode()


def transfer_body() -> bytes:
    data = {
        "id": e2e_id()[-8:],
        "idempotencyKey": "payout-" + e2e_id()[-11:],
        "endToEndId": e2e_id(),
        "status": "LIQUIDATED",
        "payment": {"currency": "BRL", "amount": "10.00"},
    }
    return json.dumps({"type": "TRANSFER", "data": data}).encode()


def signed_headers(body: bytes, key: str = HMAC_KEY, at: int | None = None) -> dict[str, str]:
    timestamp = str(int(time.time()) if at is None else at)
    message_id = "msg_" + e2e_id()[-11:]
    return {
        "webhook-id": message_id,
        "webhook-timestamp": timestamp,
        "webhook-signature": standard_signature(key, message_id, timestamp, body),
    }


def post(url: str, body: bytes, headers: dict[str, str], path: str = PIX_PATH) -> httpx.Response:
    headers = {"Content-Type": "application/json", **headers}
    return httpx.post(url + path, content=body, headers=headers, timeout=5)


def problem_type(response: httpx.Response) -> str:
    assert response.headers["content-type"].startswith("application/problem+json")
    return str(response.json()["type"]).rsplit("/", 1)[-1]


def test_secret_rotation_old_and_new_accepted_others_refused(auth_engine: Engine) -> None:
    settings = settings_for(auth_engine, webhook_secrets=[OLD, NEW])
    with serve_node(settings, auth_engine) as url:
        for refused in ({}, {"X-Webhook-Secret": "guess"}):
            response = post(url, pix_body(), refused)
            assert response.status_code == 401
            assert problem_type(response) == "unauthenticated"
            assert OLD not in response.text
            assert NEW not in response.text
        assert stored_counts(auth_engine) == (0, 0)
        for secret in (OLD, NEW):
            assert post(url, pix_body(), {"X-Webhook-Secret": secret}).status_code == 200
    assert stored_counts(auth_engine) == (2, 2)
    with session_scope(auth_engine) as session:
        stored = [json.loads(d.headers) for d in session.scalars(select(WebhookDelivery))]
    assert all("x-webhook-secret" not in headers for headers in stored)


def test_allow_list_through_a_trusted_proxy_and_spoofing_from_elsewhere(
    auth_engine: Engine,
) -> None:
    # The server and both clients are on loopback: 127.0.0.1 plays the trusted proxy,
    # 127.0.0.2 an untrusted client that writes X-Forwarded-For itself.
    settings = settings_for(
        auth_engine, allow_ips=["198.51.100.0/24"], trusted_proxies=["127.0.0.1"]
    )
    forwarded = {"X-Forwarded-For": "198.51.100.7"}
    with serve_node(settings, auth_engine) as url:
        spoofer = httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2"))
        with spoofer:
            response = spoofer.post(url + PIX_PATH, content=pix_body(), headers=forwarded)
        assert response.status_code == 403
        assert problem_type(response) == "ip-not-allowed"
        outside = post(url, pix_body(), {"X-Forwarded-For": "198.51.100.7, 203.0.113.1"})
        assert outside.status_code == 403
        assert stored_counts(auth_engine) == (0, 0)
        assert post(url, pix_body(), forwarded).status_code == 200
    assert stored_counts(auth_engine) == (1, 1)
    with session_scope(auth_engine) as session:
        delivery = session.scalars(select(WebhookDelivery)).one()
    assert delivery.remote_addr == "198.51.100.7"


def test_each_family_is_guarded_by_its_own_defence(auth_engine: Engine) -> None:
    settings = settings_for(
        auth_engine,
        webhook_secrets=[NEW],
        hmac_secrets=[HMAC_KEY],
        qrcode_auth=["secret"],
        accounts_auth=["hmac"],
    )
    with serve_node(settings, auth_engine) as url:
        body = transfer_body()
        # The QR code secret opens nothing on the accounts routes, and vice versa.
        unsigned = post(url, body, {"X-Webhook-Secret": NEW}, ACCOUNTS_PATH)
        assert (unsigned.status_code, problem_type(unsigned)) == (401, "unauthenticated")
        signed_only = post(url, pix_body(), signed_headers(pix_body()))
        assert signed_only.status_code == 401
        assert stored_counts(auth_engine) == (0, 0)

        assert post(url, body, signed_headers(body), ACCOUNTS_PATH).status_code == 200
        assert post(url, pix_body(), {"X-Webhook-Secret": NEW}).status_code == 200
    assert stored_counts(auth_engine) == (2, 2)


def test_signed_deliveries_forged_stale_or_rotated(auth_engine: Engine) -> None:
    next_key = "whsec_" + base64.b64encode(b"accounts api signing key 0002").decode()
    settings = settings_for(
        auth_engine, hmac_secrets=[HMAC_KEY, next_key], hmac_tolerance_seconds=60
    )
    with serve_node(settings, auth_engine) as url:
        body = transfer_body()
        forged = {**signed_headers(body), "webhook-signature": "v1," + "A" * 43 + "="}
        response = post(url, body, forged, ACCOUNTS_PATH)
        assert (response.status_code, problem_type(response)) == (401, "invalid-signature")
        tampered = post(url, body.replace(b"10.00", b"99.00"), signed_headers(body), ACCOUNTS_PATH)
        assert problem_type(tampered) == "invalid-signature"
        stale = post(url, body, signed_headers(body, at=int(time.time()) - 3600), ACCOUNTS_PATH)
        assert (stale.status_code, problem_type(stale)) == (401, "stale-signature")
        assert stored_counts(auth_engine) == (0, 0)

        assert post(url, body, signed_headers(body, next_key), ACCOUNTS_PATH).status_code == 200
    assert stored_counts(auth_engine) == (1, 1)
