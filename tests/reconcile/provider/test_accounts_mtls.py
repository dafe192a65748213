"""Mutual TLS to the accounts API: no client certificate, no handshake."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import trustme

from reconcile.provider import ProviderUnavailable, RetryPolicy
from sandbox.accounts import create_accounts_app
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider
from tests.sandbox.sandbox_support import accounts_api


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def mtls_server(
    ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BackgroundServer]:
    folder: Path = tmp_path_factory.mktemp("mtls")
    server_cert = ca.issue_cert("127.0.0.1", "localhost")
    cert, key, ca_file = folder / "server.pem", folder / "server.key", folder / "ca.pem"
    server_cert.cert_chain_pems[0].write_to_path(str(cert))
    server_cert.private_key_pem.write_to_path(str(key))
    ca.cert_pem.write_to_path(str(ca_file))
    app = create_accounts_app(SandboxProvider(seed=1))
    with BackgroundServer(
        app,
        ssl_certfile=str(cert),
        ssl_keyfile=str(key),
        ssl_ca_certs=str(ca_file),
        ssl_cert_reqs=ssl.CERT_REQUIRED,
    ) as server:
        yield server


def _context(ca: trustme.CA, *, client_cert: bool) -> ssl.SSLContext:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    if client_cert:
        ca.issue_cert("merchant.example").configure_cert(context)
    return context


def test_a_client_without_a_certificate_fails_the_handshake(
    ca: trustme.CA, mtls_server: BackgroundServer
) -> None:
    assert mtls_server.url.startswith("https://")
    with httpx.Client(verify=_context(ca, client_cert=False), timeout=5) as http:
        with pytest.raises(httpx.TransportError):
            http.post(mtls_server.url + "/oauth/token", data={"grant_type": "client_credentials"})
        api = accounts_api(mtls_server.url, http_client=http, retry=RetryPolicy(max_attempts=1))
        with pytest.raises(ProviderUnavailable):
            api.get_balance()


def test_a_client_with_a_certificate_gets_through(
    ca: trustme.CA, mtls_server: BackgroundServer
) -> None:
    with httpx.Client(verify=_context(ca, client_cert=True), timeout=5) as http:
        api = accounts_api(mtls_server.url, http_client=http)
        assert api.get_balance() == 0
        assert api.tokens.fetch_count == 1
