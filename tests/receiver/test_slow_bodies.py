"""A sender that stalls mid-body holds a delivery slot only until
``PIXRECON_BODY_TIMEOUT_SECONDS``: then it is answered 408, its connection closed and
nothing of it stored, and the provider's deliveries go on being accepted however many
such senders there were."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest
from sqlalchemy import Engine, func, select

from pixrecon.node import Node
from reconcile.db import session_scope
from reconcile.models import InboxItem, QuarantinedDelivery
from sandbox.server import BackgroundServer
from tests.conftest import SECRET, make_settings
from tests.factories import pix

SLOTS = 2
TIMEOUT = 1.0


@pytest.fixture
def server(engine: Engine) -> Iterator[str]:
    url = engine.url.render_as_string(hide_password=False)
    settings = make_settings(url, max_waiting_deliveries=SLOTS, body_timeout_seconds=TIMEOUT)
    with Node(settings, engine) as node, BackgroundServer(node.app) as running:
        yield running.url


def _stall(url: str) -> socket.socket:
    """Headers promising 1,000 bytes, then 10 of them, then nothing."""
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80))
    sock.sendall(
        b"POST /webhooks/qrcode/pix HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"X-Webhook-Secret: {SECRET}\r\nContent-Length: 1000\r\n\r\n".encode()
        + b'{"pix": [ '
    )
    return sock


def _answer(sock: socket.socket, within: float) -> bytes:
    sock.settimeout(within)
    received = b""
    try:
        while chunk := sock.recv(4096):
            received += chunk
    except TimeoutError:
        pass
    return received


def test_stalled_bodies_give_their_slots_back(server: str, engine: Engine) -> None:
    stalled = [_stall(server) for _ in range(SLOTS)]
    time.sleep(0.2)
    with httpx.Client(base_url=server, headers={"X-Webhook-Secret": SECRET}) as http:
        # Every slot is held now: the provider is told to come back.
        assert http.post("/webhooks/qrcode/pix", json=pix()).status_code == 503
        began = time.monotonic()
        answers = [_answer(sock, TIMEOUT + 5) for sock in stalled]
        assert time.monotonic() - began < TIMEOUT + 5
        for answer in answers:
            assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
            assert b"body-timeout" in answer
        # The connections were closed (recv returned b""), and the slots are free again.
        delivered = http.post("/webhooks/qrcode/pix", json=pix())
        assert delivered.status_code == 200, delivered.text
    for sock in stalled:
        sock.close()
    with session_scope(engine) as session:
        assert session.execute(select(func.count()).select_from(InboxItem)).scalar_one() == 1
        quarantined = session.execute(select(QuarantinedDelivery)).scalars().all()
    assert [row.reason for row in quarantined] == ["body-timeout"] * SLOTS
    assert all(row.body is None for row in quarantined)
