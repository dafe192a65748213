"""GET, HEAD and OPTIONS on every webhook URL (receiver/probe.py): a provider checking the
URL it registers is answered as a working URL, without credentials, and nothing is stored
or counted as a delivery; POST is unchanged."""

from __future__ import annotations

import io
import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, func, select
from starlette.routing import Route

from pixrecon.node import Node
from receiver.app import create_app
from reconcile.db import session_scope
from reconcile.models import InboxItem, QuarantinedDelivery, WebhookDelivery
from sandbox.server import BackgroundServer
from tests.conftest import SECRET, RunningNode, make_settings, wait_for
from tests.factories import pix

ALLOW = "POST, GET, HEAD, OPTIONS"
# Every route, and the URLs registrations produce (a trailing slash, a doubled segment, a
# query string the provider appends to).
PATHS = [
    "/webhooks/qrcode",
    "/webhooks/qrcode/pix",
    "/webhooks/qrcode/rec",
    "/webhooks/qrcode/cobr",
    "/webhooks/accounts",
    "/webhooks/accounts/TRANSFER",
    "/webhooks/qrcode/",
    "/webhooks/qrcode/pix/pix",
    "/webhooks/qrcode?ignorar=/rec",
    "/webhooks//accounts/",
]


def _count(engine: Engine, model: type[Any]) -> int:
    with session_scope(engine) as session:
        return int(session.execute(select(func.count()).select_from(model)).scalar_one())


def _stored(engine: Engine) -> tuple[int, int, int]:
    """Deliveries, inbox items and quarantined (refused) requests."""
    return (
        _count(engine, WebhookDelivery),
        _count(engine, InboxItem),
        _count(engine, QuarantinedDelivery),
    )


def _url(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=False)


def _probed(http: httpx.Client, path: str) -> None:
    got = http.get(path)
    assert got.status_code == 200, (path, got.text)
    assert got.headers["allow"] == ALLOW
    assert got.headers["content-type"] == "application/json"
    body = got.json()
    assert body["method"] == "POST"
    assert body["stored"] is False
    head = http.head(path)
    assert head.status_code == 200
    assert head.headers["allow"] == ALLOW
    assert head.content == b""
    assert head.headers["content-length"] == str(len(got.content))
    options = http.options(path)
    assert options.status_code == 204
    assert options.headers["allow"] == ALLOW
    assert options.content == b""


def test_probes_are_answered_without_credentials_and_store_nothing(
    running_node: RunningNode, json_logs: io.StringIO
) -> None:
    engine = running_node.node.engine
    with httpx.Client(base_url=running_node.url) as anonymous:
        for path in PATHS:
            _probed(anonymous, path)
        # A body sent along is not read, and does not make a probe a delivery.
        assert anonymous.request("GET", PATHS[1], json={"pix": [pix()]}).status_code == 200
        # The credentials a POST needs are still needed there.
        refused = anonymous.post("/webhooks/qrcode/pix", json={"pix": [pix()]})
        assert refused.status_code == 401
    assert _stored(engine) == (0, 0, 1)  # only the refused POST, quarantined
    # Other methods are still not allowed.
    assert running_node.http.put("/webhooks/qrcode/pix", json={}).status_code == 405
    assert running_node.http.delete("/webhooks/accounts").status_code == 405
    # The answer is the same whoever asks: with the secret, nothing more is said.
    with_secret = running_node.http.get("/webhooks/qrcode/pix")
    with httpx.Client(base_url=running_node.url) as anonymous:
        assert anonymous.get("/webhooks/qrcode/pix").content == with_secret.content
    lines = [json.loads(line) for line in json_logs.getvalue().splitlines() if line.startswith("{")]
    probed = [line for line in lines if line["event"] == "webhook_probed"]
    assert {line["method"] for line in probed} == {"GET", "HEAD", "OPTIONS"}
    # The route's template is logged, never what a client put in the path.
    assert "/webhooks/accounts/{kind}" in {line["route"] for line in probed}
    assert not any("TRANSFER" in line["route"] for line in probed)


def test_after_probes_a_delivery_is_stored_and_only_it_counted(running_node: RunningNode) -> None:
    engine = running_node.node.engine
    with httpx.Client(base_url=running_node.url) as anonymous:
        for path in ("/webhooks/qrcode/pix", "/webhooks/accounts"):
            _probed(anonymous, path)
    answer = running_node.post_pix({"pix": [pix()]})
    assert answer.status_code == 200
    assert answer.json() == {"items": 1, "new": 1, "duplicates": 0}
    accounts = running_node.http.post("/webhooks/accounts", json={"type": "PING"})
    assert accounts.status_code == 200
    assert _stored(engine) == (2, 2, 0)
    metrics = running_node.http.get("/metrics").text
    # A probe is no delivery: the deliveries' counts and times are the POSTs' alone.
    delivered = 'pixrecon_webhook_deliveries_total{route="/webhooks/qrcode/pix",status="200"}'
    assert f"{delivered} 1.0" in metrics
    assert 'pixrecon_webhook_ack_seconds_count{route="/webhooks/qrcode/pix"} 1.0' in metrics
    assert 'pixrecon_webhook_ack_seconds_count{route="/webhooks/accounts"} 1.0' in metrics


def test_every_webhook_route_takes_the_probes_and_documents_them(engine: Engine) -> None:
    app = create_app(make_settings(_url(engine)), engine)
    webhooks = {
        route.path: route
        for route in app.routes
        if isinstance(route, Route) and route.path.startswith("/webhooks/")
    }
    assert {"/webhooks/qrcode/pix", "/webhooks/accounts/{kind}"} <= set(webhooks)
    for path, route in webhooks.items():
        assert route.methods == {"POST", "GET", "HEAD", "OPTIONS"}, path
    with BackgroundServer(app) as server:
        document = httpx.get(server.url + "/openapi.json").json()
    documented = {p for p in document["paths"] if p.startswith("/webhooks/")}
    # OpenAPI's templates name a parameter without Starlette's convertor (``{more:path}``).
    assert documented == {path.replace(":path}", "}") for path in webhooks}
    for path in documented:
        operations = document["paths"][path]
        assert {"post", "get", "head", "options"} <= set(operations), path
        for method in ("get", "head", "options"):
            assert operations[method]["security"] == [], (path, method)
        allow = operations["options"]["responses"]["204"]["headers"]["Allow"]
        assert allow["schema"]["const"] == ALLOW
        # A delivery still needs its credentials.
        assert "security" not in operations["post"]
    assert document["security"] == [{"webhookSecret": []}]


@contextmanager
def _held_in_flight(url: str) -> Iterator[socket.socket]:
    """A delivery whose body never finishes arriving: in flight until the socket closes."""
    where = httpx.URL(url)
    with socket.create_connection((where.host, where.port), timeout=10) as sock:
        sock.sendall(
            b"POST /webhooks/qrcode/pix HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nX-Webhook-Secret: " + SECRET.encode() + b"\r\n"
            b"Content-Length: 1000\r\n\r\n{"
        )
        yield sock


@pytest.mark.parametrize("method", ["GET", "HEAD", "OPTIONS"])
def test_probes_are_answered_when_deliveries_are_at_their_bound(
    engine: Engine, method: str
) -> None:
    settings = make_settings(_url(engine), max_waiting_deliveries=1)
    with (
        Node(settings, engine) as node,
        BackgroundServer(node.app) as server,
        httpx.Client(base_url=server.url, headers={"X-Webhook-Secret": SECRET}) as http,
    ):

        def door() -> int:
            # Malformed: refused (400) when let in, so waiting here stores nothing.
            return http.post("/webhooks/accounts", content=b"{").status_code

        with _held_in_flight(server.url):
            # Once the held delivery is in, the next one is refused at the door.
            wait_for(lambda: door() == 503)
            probe = http.request(method, "/webhooks/qrcode/pix")
            assert probe.status_code == (204 if method == "OPTIONS" else 200)
            assert probe.headers["allow"] == ALLOW
            # Nor does a probe take the place a delivery waits for.
            assert door() == 503
        # The held sender gone, deliveries are let in again.
        wait_for(lambda: door() == 400)
        assert http.post("/webhooks/accounts", json={"type": "PING"}).status_code == 200
        metrics = http.get("/metrics").text
    assert _count(engine, WebhookDelivery) == 1
    # Only deliveries were refused at the door, never the probe.
    overloaded = 'pixrecon_webhook_refusals_total{reason="overloaded",route="/webhooks/qrcode/pix"}'
    assert overloaded not in metrics
    assert 'pixrecon_webhook_refusals_total{reason="overloaded",route="/webhooks/accounts"}' in (
        metrics
    )
