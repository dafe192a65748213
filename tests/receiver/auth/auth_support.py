"""Helpers shared by the authentication tests: requests, certificates, running receivers."""

from __future__ import annotations

import base64
import hashlib
import hmac
import shutil
import ssl
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import trustme
from sqlalchemy import Engine, func, select
from starlette.requests import Request

from pixrecon.node import Node
from reconcile.db import create_db_engine, session_scope
from reconcile.models import InboxItem, WebhookDelivery
from reconcile.settings import Settings
from sandbox.server import BackgroundServer
from tests.conftest import make_settings

PIX_PATH = "/webhooks/qrcode/pix"
ACCOUNTS_PATH = "/webhooks/accounts"


def make_request(
    peer: str | None = "203.0.113.10",
    headers: Sequence[tuple[str, str]] = (),
    *,
    scheme: str = "http",
) -> Request:
    scope: dict[str, Any] = {
        "type": "http",
        "method": "POST",
        "scheme": scheme,
        "path": PIX_PATH,
        "raw_path": PIX_PATH.encode(),
        "query_string": b"",
        "headers": [(name.lower().encode(), value.encode()) for name, value in headers],
        "client": (peer, 40000) if peer is not None else None,
        "server": ("127.0.0.1", 8000),
    }
    return Request(scope)


def settings_for(engine: Engine | None = None, /, **overrides: object) -> Settings:
    """``make_settings`` with only what the test asks for: no secret unless given."""
    url = engine.url.render_as_string(hide_password=False) if engine else "sqlite://"
    values: dict[str, object] = {"webhook_secrets": []}
    values.update(overrides)
    return make_settings(url, **values)


def standard_signature(secret: str, message_id: str, timestamp: str, body: bytes) -> str:
    """Written from the specification, independently of ``receiver.auth.signature``."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    digest = hmac.new(key, f"{message_id}.{timestamp}.".encode() + body, hashlib.sha256)
    return "v1," + base64.b64encode(digest.digest()).decode()


def stored_counts(engine: Engine) -> tuple[int, int]:
    """(webhook deliveries, inbox items): a refused delivery must leave both at zero."""
    with session_scope(engine) as session:
        deliveries = session.scalar(select(func.count()).select_from(WebhookDelivery))
        items = session.scalar(select(func.count()).select_from(InboxItem))
    return int(deliveries or 0), int(items or 0)


@contextmanager
def serve_node(settings: Settings, engine: Engine, **uvicorn_options: Any) -> Iterator[str]:
    """The receiver as ``pixrecon serve`` runs it (uvicorn's proxy headers off); yields
    the base URL."""
    uvicorn_options.setdefault("proxy_headers", False)
    with Node(settings, engine) as node, BackgroundServer(node.app, **uvicorn_options) as server:
        yield server.url


@dataclass(frozen=True)
class Pki:
    """A server certificate, the CA that signs the provider's client certificates, a
    provider certificate from it, another certificate from it with a different subject,
    and an impostor's certificate from another CA with the provider's names."""

    directory: Path
    server_ca: trustme.CA
    server_cert: Path
    server_key: Path
    client_ca: Path
    good_client: trustme.LeafCert
    other_client: trustme.LeafCert
    rogue_client: trustme.LeafCert

    def client(self, certificate: trustme.LeafCert | None, **options: Any) -> httpx.Client:
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        self.server_ca.configure_trust(context)
        if certificate is not None:
            certificate.configure_cert(context)
        return httpx.Client(verify=context, timeout=5, **options)


def make_pki(directory: Path) -> Pki:
    server_ca = trustme.CA(organization_name="pixrecon tests server CA")
    server = server_ca.issue_cert("127.0.0.1", "localhost")
    client_ca = trustme.CA(organization_name="Provider client CA")
    good = client_ca.issue_cert("webhooks.provider.example", common_name="provider-webhooks")
    other = client_ca.issue_cert("other.provider.example", common_name="other-system")
    rogue_ca = trustme.CA(organization_name="Provider client CA")
    rogue = rogue_ca.issue_cert("webhooks.provider.example", common_name="provider-webhooks")
    paths = {name: directory / f"{name}.pem" for name in ("server", "server-key", "client-ca")}
    server.cert_chain_pems[0].write_to_path(str(paths["server"]))
    server.private_key_pem.write_to_path(str(paths["server-key"]))
    client_ca.cert_pem.write_to_path(str(paths["client-ca"]))
    return Pki(
        directory=directory,
        server_ca=server_ca,
        server_cert=paths["server"],
        server_key=paths["server-key"],
        client_ca=paths["client-ca"],
        good_client=good,
        other_client=other,
        rogue_client=rogue,
    )


@contextmanager
def sqlite_engine(template: Path, directory: Path) -> Iterator[Engine]:
    """Authentication does not depend on the database, so one dialect is enough here."""
    path = directory / "pixrecon.db"
    shutil.copy(template, path)
    engine = create_db_engine(f"sqlite:///{path}")
    try:
        yield engine
    finally:
        engine.dispose()
