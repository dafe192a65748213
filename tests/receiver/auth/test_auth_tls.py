"""Mutual TLS terminated by uvicorn itself, as ``pixrecon serve`` runs it: real
handshakes on loopback with certificates from throw-away CAs."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine

from receiver.tls import TlsConfigError, tls_options
from reconcile.settings import Settings
from tests.factories import pix
from tests.receiver.auth.auth_support import (
    PIX_PATH,
    Pki,
    make_pki,
    serve_node,
    settings_for,
    sqlite_engine,
    stored_counts,
)

# With TLS 1.3 the server judges the client certificate after the client thinks the
# handshake is over, so the refusal may surface on connect, on write or on read.
REFUSED = (httpx.ConnectError, httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def auth_engine(sqlite_template: Path, tmp_path: Path) -> Iterator[Engine]:
    with sqlite_engine(sqlite_template, tmp_path) as engine:
        yield engine


def mtls_settings(pki: Pki, engine: Engine | None = None, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "tls_certfile": str(pki.server_cert),
        "tls_keyfile": str(pki.server_key),
        "tls_client_ca": str(pki.client_ca),
        "qrcode_auth": ["mtls"],
    }
    values.update(overrides)
    return settings_for(engine, **values)


def test_options_for_uvicorn(pki: Pki) -> None:
    assert tls_options(settings_for(webhook_secrets=["s"])) == {}
    server_only = mtls_settings(pki, tls_client_ca=None, qrcode_auth=[], webhook_secrets=["s"])
    assert tls_options(server_only) == {
        "ssl_certfile": str(pki.server_cert),
        "ssl_keyfile": str(pki.server_key),
    }
    assert tls_options(mtls_settings(pki)) == {
        "ssl_certfile": str(pki.server_cert),
        "ssl_keyfile": str(pki.server_key),
        "ssl_ca_certs": str(pki.client_ca),
        "ssl_cert_reqs": ssl.CERT_REQUIRED,
    }


def test_mismatched_key_is_refused_before_start(pki: Pki) -> None:
    with pytest.raises(TlsConfigError) as raised:
        tls_options(mtls_settings(pki, tls_keyfile=str(pki.client_ca)))
    assert "PIXRECON_TLS_CERTFILE / PIXRECON_TLS_KEYFILE cannot be loaded" in str(raised.value)


@pytest.fixture
def mtls_url(pki: Pki, auth_engine: Engine) -> Iterator[str]:
    settings = mtls_settings(pki, auth_engine)
    with serve_node(settings, auth_engine, **tls_options(settings)) as url:
        yield url


def test_provider_certificate_is_accepted_and_stored(
    pki: Pki, mtls_url: str, auth_engine: Engine
) -> None:
    with pki.client(pki.good_client) as client:
        response = client.post(mtls_url + PIX_PATH, json={"pix": [pix()]})
    assert response.status_code == 200, response.text
    assert stored_counts(auth_engine) == (1, 1)


@pytest.mark.parametrize("who", ["no certificate", "certificate from another CA"])
def test_clients_without_a_good_certificate_fail_the_handshake(
    pki: Pki, mtls_url: str, auth_engine: Engine, who: str
) -> None:
    certificate = pki.rogue_client if who == "certificate from another CA" else None
    with pki.client(certificate) as client, pytest.raises(REFUSED):
        client.post(mtls_url + PIX_PATH, json={"pix": [pix()]})
    assert stored_counts(auth_engine) == (0, 0)


def test_plain_http_to_the_tls_port_gets_nowhere(mtls_url: str, auth_engine: Engine) -> None:
    with httpx.Client(timeout=5) as client, pytest.raises(REFUSED):
        client.post(mtls_url.replace("https://", "http://") + PIX_PATH, json={"pix": [pix()]})
    assert stored_counts(auth_engine) == (0, 0)


def test_same_app_served_without_tls_refuses_with_401(pki: Pki, auth_engine: Engine) -> None:
    # Configured for mutual TLS but started without it (not through `pixrecon serve`):
    # the application refuses instead of trusting a handshake that never happened.
    with serve_node(mtls_settings(pki, auth_engine), auth_engine) as url:
        response = httpx.post(url + PIX_PATH, json={"pix": [pix()]}, timeout=5)
    assert response.status_code == 401
    assert response.json()["type"].endswith("/client-certificate-required")
    assert stored_counts(auth_engine) == (0, 0)
