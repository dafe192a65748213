"""The shipped nginx template, run for real: nginx terminates mutual TLS in front of a
receiver on loopback and reports the verification in headers that the receiver believes
only when they come from nginx."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import trustme
from cryptography import x509
from sqlalchemy import Engine, select

from reconcile.db import session_scope
from reconcile.models import WebhookDelivery
from tests.conftest import free_port, service_missing
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

TEMPLATE = Path(__file__).parents[3] / "docs" / "nginx" / "pixrecon-mtls.conf"
# nginx connects to the receiver from this address (proxy_bind in the test's main
# config), the only trusted proxy; clients that bypass nginx come from 127.0.0.1.
NGINX_SOURCE = "127.0.0.2"
VERIFY_HEADER = "X-SSL-Client-Verify"
SUBJECT_HEADER = "X-SSL-Client-Subject"
REFUSED = (httpx.ConnectError, httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)

MAIN_CONFIG = """
daemon off;
{user}
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log info;
events {{ worker_connections 64; }}
http {{
    access_log {prefix}/access.log;
    client_body_temp_path {prefix}/client_body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    proxy_bind {source};
    include {prefix}/pixrecon-mtls.conf;
}}
"""


def nginx_binary() -> str:
    # Debian installs it in /usr/sbin, which is not on every user's PATH.
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")
    if found is None:
        service_missing("nginx", "no nginx binary; apt-get install -y nginx-light")
        raise AssertionError("unreachable")
    return found


def legacy_subject(certificate: trustme.LeafCert) -> str:
    """The subject as nginx's $ssl_client_s_dn_legacy writes it (OpenSSL's one-line form)."""
    name = x509.load_pem_x509_certificate(certificate.cert_chain_pems[0].bytes()).subject
    return "".join(f"/{attribute.rfc4514_attribute_name}={attribute.value!s}" for attribute in name)


def render(template: str, values: dict[str, str]) -> str:
    for name, value in values.items():
        template = template.replace(f"@{name}@", value)
    leftover = re.findall(r"@[A-Z_]+@", template)
    assert not leftover, f"placeholders left unrendered: {leftover}"
    return template


def wait_listening(process: subprocess.Popen[bytes], port: int, logs: Path) -> None:
    deadline = time.monotonic() + 10
    while True:
        if process.poll() is not None:
            pytest.fail(f"nginx exited with {process.returncode}: {logs.read_text()[-3000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                pytest.fail(f"nginx is not listening after 10 s: {logs.read_text()[-3000:]}")
            time.sleep(0.02)


@contextmanager
def running_nginx(prefix: Path, pki: Pki, upstream: str) -> Iterator[str]:
    """nginx in the foreground with everything (pid, logs, temp files) under ``prefix``."""
    binary = nginx_binary()
    port = free_port()
    site = render(
        TEMPLATE.read_text(),
        {
            "LISTEN": f"127.0.0.1:{port}",
            "SERVER_NAME": "localhost",
            "SERVER_CERT": str(pki.server_cert),
            "SERVER_KEY": str(pki.server_key),
            "CLIENT_CA": str(pki.client_ca),
            "UPSTREAM": upstream,
        },
    )
    (prefix / "pixrecon-mtls.conf").write_text(site)
    # As root, workers would otherwise run as "nobody", who cannot enter pytest's
    # private temporary directory.
    user = "user root;" if os.geteuid() == 0 else ""
    config = prefix / "nginx.conf"
    config.write_text(MAIN_CONFIG.format(user=user, prefix=prefix, source=NGINX_SOURCE))
    logs = prefix / "error.log"
    logs.touch()
    process = subprocess.Popen(
        [binary, "-p", str(prefix), "-c", str(config), "-e", str(logs)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_listening(process, port, logs)
        yield f"https://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@dataclass(frozen=True)
class Deployment:
    nginx: str
    receiver: str
    engine: Engine


@pytest.fixture
def deployment(pki: Pki, sqlite_template: Path, tmp_path: Path) -> Iterator[Deployment]:
    nginx_binary()  # skip (or fail under CI) before building anything
    with sqlite_engine(sqlite_template, tmp_path) as engine:
        settings = settings_for(
            engine,
            qrcode_auth=["mtls"],
            trusted_proxies=[NGINX_SOURCE],
            mtls_verified_header=VERIFY_HEADER,
            mtls_subject_header=SUBJECT_HEADER,
            mtls_allowed_subjects=[legacy_subject(pki.good_client)],
        )
        with serve_node(settings, engine) as receiver:
            upstream = receiver.removeprefix("http://")
            prefix = tmp_path / "nginx"
            prefix.mkdir()
            with running_nginx(prefix, pki, upstream) as nginx:
                yield Deployment(nginx=nginx, receiver=receiver, engine=engine)


def test_provider_certificate_through_nginx_is_accepted(pki: Pki, deployment: Deployment) -> None:
    forged = {"X-Forwarded-For": "198.51.100.7", SUBJECT_HEADER: "/CN=forged"}
    with pki.client(pki.good_client) as client:
        response = client.post(deployment.nginx + PIX_PATH, json={"pix": [pix()]}, headers=forged)
    assert response.status_code == 200, response.text
    assert stored_counts(deployment.engine) == (1, 1)
    with session_scope(deployment.engine) as session:
        delivery = session.scalars(select(WebhookDelivery)).one()
        headers = json.loads(delivery.headers)
    # nginx replaced what the client wrote with what it saw.
    assert headers["x-forwarded-for"] == "127.0.0.1"
    assert headers[SUBJECT_HEADER.lower()] == legacy_subject(pki.good_client)
    assert headers[VERIFY_HEADER.lower()] == "SUCCESS"
    assert delivery.remote_addr == "127.0.0.1"


@pytest.mark.parametrize("who", ["no certificate", "certificate from another CA"])
def test_clients_without_a_good_certificate_are_refused_by_nginx(
    pki: Pki, deployment: Deployment, who: str
) -> None:
    certificate = pki.rogue_client if who == "certificate from another CA" else None
    forged = {VERIFY_HEADER: "SUCCESS", SUBJECT_HEADER: legacy_subject(pki.good_client)}
    with pki.client(certificate) as client:
        try:
            response = client.post(
                deployment.nginx + PIX_PATH, json={"pix": [pix()]}, headers=forged
            )
        except REFUSED:
            pass  # the handshake failed: refused before HTTP
        else:
            # nginx completes the handshake and answers 400 itself ("No required SSL
            # certificate was sent" / "The SSL certificate error").
            assert response.status_code == 400
            assert "SSL certificate" in response.text
    assert stored_counts(deployment.engine) == (0, 0)


def test_right_ca_but_subject_not_allowed_is_401(pki: Pki, deployment: Deployment) -> None:
    # The client even claims the allowed subject itself; nginx overwrites it.
    claimed = {SUBJECT_HEADER: legacy_subject(pki.good_client)}
    with pki.client(pki.other_client) as client:
        response = client.post(deployment.nginx + PIX_PATH, json={"pix": [pix()]}, headers=claimed)
    assert response.status_code == 401
    assert response.json()["type"].endswith("/client-certificate-not-allowed")
    assert stored_counts(deployment.engine) == (0, 0)


def test_forged_verification_header_sent_straight_to_the_receiver_is_401(
    pki: Pki, deployment: Deployment
) -> None:
    forged = {VERIFY_HEADER: "SUCCESS", SUBJECT_HEADER: legacy_subject(pki.good_client)}
    response = httpx.post(
        deployment.receiver + PIX_PATH, json={"pix": [pix()]}, headers=forged, timeout=5
    )
    assert response.status_code == 401
    assert response.json()["type"].endswith("/client-certificate-required")
    assert stored_counts(deployment.engine) == (0, 0)


def test_only_webhook_routes_are_published(pki: Pki, deployment: Deployment) -> None:
    with pki.client(pki.good_client) as client:
        assert client.get(deployment.nginx + "/metrics").status_code == 404
