"""Deliveries as senders really make them, at the edges: a NUL in the path, a documented key
left `null` beside another spelling, a wrong charset, a body that is only a byte order
mark, invisible characters around a key, a sender that leaves mid-body, and a fault of the
receiver's own. None turns the provider away for nothing, and none logs what it carries."""

from __future__ import annotations

import io
import json
import socket
import time
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy import select

from reconcile.db import session_scope
from reconcile.models import InboxItem, QuarantinedDelivery, WebhookDelivery
from tests.conftest import SECRET, RunningNode
from tests.factories import e2e_id, pix

CPF = "98765432100"


def _lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.startswith("{")]


def _keys(node: RunningNode) -> set[str]:
    with session_scope(node.node.engine) as session:
        return set(session.execute(select(InboxItem.key)).scalars())  # type: ignore[call-overload]


def test_a_nul_in_the_accounts_path_is_stored_not_a_500(running_node: RunningNode) -> None:
    body = {"type": "TRANSFER", "data": {"id": "po-nul-1", "status": "LIQUIDATED"}}
    answer = running_node.http.post("/webhooks/accounts/%00", json=body)
    assert answer.status_code == 200, answer.text
    assert "accounts:TRANSFER:po-nul-1:LIQUIDATED" in _keys(running_node)
    with session_scope(running_node.node.engine) as session:
        routes = list(session.execute(select(WebhookDelivery.route)).scalars())  # type: ignore[call-overload]
    assert routes == ["/webhooks/accounts/\ufffd"]
    anonymous = running_node.http.post(
        "/webhooks/accounts/%00", json=body, headers={"X-Webhook-Secret": "wrong"}
    )
    assert anonymous.status_code == 401
    assert anonymous.headers["content-type"] == "application/problem+json"


def test_a_fault_of_the_receiver_is_a_problem_and_one_line_without_the_body(
    running_node: RunningNode, json_logs: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: object) -> object:
        raise RuntimeError(f"parameters: {CPF}")

    monkeypatch.setattr("receiver.ingest.parse_json", broken)
    answer = running_node.post_pix({"pix": [pix()]})
    assert answer.status_code == 500
    assert answer.headers["content-type"] == "application/problem+json"
    problem = answer.json()
    assert problem["type"].endswith("/unexpected-error")
    assert problem["request_id"] == answer.headers["x-request-id"]
    (line,) = [line for line in _lines(json_logs) if line["event"] == "unexpected_error"]
    assert (line["error"], line["route"]) == ("RuntimeError", "/webhooks/qrcode/pix")
    assert CPF not in json_logs.getvalue()
    assert "Traceback" not in json_logs.getvalue()


def test_a_refused_path_is_logged_by_its_route_not_as_sent(
    running_node: RunningNode, json_logs: io.StringIO
) -> None:
    answer = running_node.http.post(
        f"/webhooks/accounts/{CPF}", json={}, headers={"X-Webhook-Secret": "wrong"}
    )
    assert answer.status_code == 401
    (line,) = [line for line in _lines(json_logs) if line["event"] == "webhook_refused"]
    assert line["route"] == "/webhooks/accounts/{kind}"
    assert CPF not in json_logs.getvalue()


def test_a_null_key_under_its_documented_name_gives_way_to_another_spelling(
    running_node: RunningNode,
) -> None:
    e2e = e2e_id()
    body = pix(e2e="x")
    body["endToEndId"] = None
    body["EndToEndId"] = e2e
    answer = running_node.post_pix({"pix": [body]})
    assert answer.status_code == 200, answer.text
    assert f"pix:{e2e}" in _keys(running_node)


@pytest.mark.parametrize("invisible", ["\ufeff", "\u200b", "\u2060"])
def test_invisible_characters_around_a_key_are_not_part_of_it(
    running_node: RunningNode, invisible: str
) -> None:
    e2e = e2e_id()
    answer = running_node.post_pix({"pix": [pix(e2e=f"{invisible}{e2e}{invisible}")]})
    assert answer.status_code == 200, answer.text
    assert f"pix:{e2e}" in _keys(running_node)


def test_a_body_in_another_charset_than_declared_is_read(running_node: RunningNode) -> None:
    e2e = e2e_id()
    body = json.dumps({"pix": [pix(e2e=e2e, infoPagador="pagamento da fatura nº 7, João")]})
    answer = running_node.http.post(
        "/webhooks/qrcode/pix",
        content=body.encode("utf-8").replace(b"\\u00ba", "º".encode()),
        headers={"Content-Type": "application/json; charset=US-ASCII"},
    )
    assert answer.status_code == 200, answer.text
    assert f"pix:{e2e}" in _keys(running_node)


def test_a_body_of_only_a_byte_order_mark_is_a_ping(running_node: RunningNode) -> None:
    answer = running_node.http.post(
        "/webhooks/qrcode/pix",
        content=b"\xef\xbb\xbf",
        headers={"Content-Type": "application/json"},
    )
    assert answer.status_code == 200, answer.text


def test_a_sender_that_leaves_mid_body_is_refused_quietly(
    running_node: RunningNode, json_logs: io.StringIO
) -> None:
    address = urlsplit(running_node.url)
    with socket.create_connection((address.hostname, address.port)) as conn:
        conn.sendall(
            b"POST /webhooks/qrcode/pix HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"X-Webhook-Secret: {SECRET}\r\nContent-Length: 500\r\n\r\n".encode()
            + b'{"pix": [{"endToEnd'
        )
        time.sleep(0.2)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        refused = [line for line in _lines(json_logs) if line["event"] == "webhook_refused"]
        if refused:
            break
        time.sleep(0.05)
    assert [line["reason"] for line in refused] == ["client-disconnected"]
    assert not [line for line in _lines(json_logs) if line["event"] == "unexpected_error"]
    with session_scope(running_node.node.engine) as session:
        assert session.execute(select(QuarantinedDelivery)).first() is None
