"""``pixrecon serve`` as an operator starts it: refusals are loud, and the TLS settings
reach uvicorn (a real handshake against the real process)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.cli_support import clean_env, run_pixrecon
from tests.conftest import free_port, wait_for
from tests.factories import pix
from tests.receiver.auth.auth_support import PIX_PATH, Pki, make_pki

REFUSED = (httpx.ConnectError, httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)


def serve(cwd: Path, env: dict[str, str], port: int = 1) -> subprocess.CompletedProcess[str]:
    return run_pixrecon("serve", "--port", str(port), cwd=cwd, env=env, timeout=60)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({}, "no webhook authentication is configured"),
        (
            {"webhook_secrets": "s", "tls_client_ca": "/etc/pixrecon/ca.pem"},
            "PIXRECON_TLS_CLIENT_CA is set but TLS is not terminated here",
        ),
        (
            {"webhook_secrets": "s", "qrcode_auth": "secret,mtls"},
            "PIXRECON_QRCODE_AUTH requires 'mtls'",
        ),
        # Insecure mode does not excuse a defence that is half set up.
        (
            {"insecure_no_auth": "1", "accounts_auth": "hmac"},
            "PIXRECON_ACCOUNTS_AUTH requires 'hmac' but PIXRECON_HMAC_SECRETS is empty",
        ),
    ],
)
def test_serve_refuses_to_start(tmp_path: Path, variables: dict[str, str], message: str) -> None:
    result = serve(tmp_path, clean_env(**variables))
    assert result.returncode == 2, result.stderr
    assert message in " ".join(result.stderr.split())
    assert not (tmp_path / "pixrecon.db").exists()  # refused before touching anything


@pytest.fixture
def served_with_mtls(pki: Pki, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    env = clean_env(
        database_url=f"sqlite:///{tmp_path / 'serve.db'}",
        tls_certfile=str(pki.server_cert),
        tls_keyfile=str(pki.server_key),
        tls_client_ca=str(pki.client_ca),
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "pixrecon", "serve", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"https://127.0.0.1:{port}"

    def up() -> bool:
        assert process.poll() is None, "pixrecon serve exited"
        try:
            with pki.client(pki.good_client) as client:
                return client.get(url + "/healthz").status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_for(up, timeout=30, interval=0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_serve_terminates_mutual_tls(pki: Pki, served_with_mtls: str) -> None:
    with pki.client(pki.good_client) as client:
        response = client.post(served_with_mtls + PIX_PATH, json={"pix": [pix()]})
    assert response.status_code == 200, response.text
    for certificate in (None, pki.rogue_client):
        with pki.client(certificate) as client, pytest.raises(REFUSED):
            client.post(served_with_mtls + PIX_PATH, json={"pix": [pix()]})
