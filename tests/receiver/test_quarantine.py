"""Refused deliveries leave a bounded forensic trail and never touch business tables."""

from __future__ import annotations

import httpx
from sqlalchemy import Engine, func, select

from pixrecon.node import Node
from reconcile.db import session_scope
from reconcile.models import InboxItem, QuarantinedDelivery, WebhookDelivery
from sandbox.server import BackgroundServer
from tests.conftest import SECRET, RunningNode, make_settings
from tests.factories import pix


def _quarantined(engine: Engine) -> list[QuarantinedDelivery]:
    with session_scope(engine) as session:
        stmt = select(QuarantinedDelivery).order_by(QuarantinedDelivery.id)  # type: ignore[arg-type]
        return list(session.execute(stmt).scalars())


def _business_rows(engine: Engine) -> int:
    with session_scope(engine) as session:
        return sum(
            int(session.execute(select(func.count()).select_from(model)).scalar_one())
            for model in (WebhookDelivery, InboxItem)
        )


def test_refusals_keep_metadata_and_only_authenticated_bodies(running_node: RunningNode) -> None:
    url = running_node.url + "/webhooks/qrcode/pix"
    anonymous = httpx.post(url, json={"pix": [pix()]}, headers={"X-Webhook-Secret": "guess"})
    assert anonymous.status_code == 401
    invalid = running_node.http.post("/webhooks/qrcode/pix", json={"pix": [{"valor": "1"}]})
    assert invalid.status_code == 400

    rows = _quarantined(running_node.node.engine)
    assert [(r.status_code, r.reason) for r in rows] == [
        (401, "unauthenticated"),
        (400, "invalid-notification"),
    ]
    assert rows[0].body is None  # an anonymous body is not kept
    assert rows[1].body == invalid.request.content
    for row in rows:
        assert row.route == "/webhooks/qrcode/pix"
        assert row.remote_addr == "127.0.0.1"
        assert SECRET not in row.headers
        assert "guess" not in row.headers
    assert _business_rows(running_node.node.engine) == 0


def test_quarantine_is_bounded(engine: Engine) -> None:
    settings = make_settings(
        engine.url.render_as_string(hide_password=False), quarantine_max_rows=3
    )
    with Node(settings, engine) as node, BackgroundServer(node.app) as server:
        for n in range(6):
            response = httpx.post(
                server.url + "/webhooks/qrcode/pix",
                content=b"{not json %d" % n,
                headers={"X-Webhook-Secret": SECRET, "content-type": "application/json"},
            )
            assert response.status_code == 400
    rows = _quarantined(engine)
    assert len(rows) == 3
    assert [r.body for r in rows] == [b"{not json 3", b"{not json 4", b"{not json 5"]
