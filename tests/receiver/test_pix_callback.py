"""The BCB Pix callback over real HTTP, with in-process workers, on SQLite and PostgreSQL."""

from __future__ import annotations

import codecs
import gzip
import json
import socket
import zlib
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from sqlmodel import col

from reconcile.db import session_scope
from reconcile.models import InboxItem, PixReceived, WebhookDelivery
from tests.conftest import SECRET, RunningNode
from tests.factories import e2e_id, pix


def _count(node: RunningNode, model: type[Any]) -> int:
    with session_scope(node.node.engine) as session:
        return int(session.execute(select(func.count()).select_from(model)).scalar_one())


@pytest.mark.parametrize(
    "shape",
    ["wrapped_list", "wrapped_object", "flat_object", "bare_array"],
)
def test_every_body_shape_is_accepted(running_node: RunningNode, shape: str) -> None:
    one = pix()
    body: object = {
        "wrapped_list": {"pix": [one]},
        "wrapped_object": {"pix": one},
        "flat_object": one,
        "bare_array": [one],
    }[shape]
    response = running_node.post_pix(body)
    assert response.status_code == 200, response.text
    assert response.json() == {"items": 1, "new": 1, "duplicates": 0}
    summary = running_node.wait_processed()
    assert summary["pix_received"] == 1
    assert summary["pix_received_cents"] == 11000


def test_bare_registered_url_is_accepted_too(running_node: RunningNode) -> None:
    response = running_node.post_pix({"pix": [pix()]}, path="/webhooks/qrcode")
    assert response.status_code == 200
    assert running_node.wait_processed()["pix_received"] == 1


@pytest.mark.parametrize(
    "path",
    [
        "/webhooks/qrcode//pix",
        "/webhooks/qrcode/pix/",
        "/webhooks//qrcode/pix",
        "/webhooks/qrcode/",
    ],
)
def test_a_url_registered_with_a_trailing_slash_still_reaches_the_pix_route(
    running_node: RunningNode, path: str
) -> None:
    # Registered as ``…/webhooks/qrcode/``, the provider appends ``/pix`` to it.
    response = running_node.post_pix({"pix": [pix()]}, path=path)
    assert response.status_code == 200, response.text
    assert running_node.wait_processed()["pix_received"] == 1
    with session_scope(running_node.node.engine) as session:
        route = session.execute(select(col(WebhookDelivery.route))).scalar_one()
    assert route in ("/webhooks/qrcode/pix", "/webhooks/qrcode")


_QR_BODIES: dict[str, Any] = {
    "pix": lambda: {"pix": [pix()]},
    "rec": lambda: {"recs": [{"idRec": "RR1"}]},
    "cobr": lambda: {"cobsr": [{"txid": "tx1"}]},
}


@pytest.mark.parametrize(
    ("path", "route"),
    [
        *(
            (f"/webhooks/qrcode/{registered}/{appended}", f"/webhooks/qrcode/{appended}")
            for registered in _QR_BODIES
            for appended in _QR_BODIES
        ),
        ("/webhooks/qrcode/pix//pix/", "/webhooks/qrcode/pix"),
        ("/webhooks/qrcode/pix//rec/", "/webhooks/qrcode/rec"),
        ("/webhooks/qrcode/pix/rec/rec", "/webhooks/qrcode/rec"),
        ("/webhooks/qrcode/loja1/pix", "/webhooks/qrcode/pix"),
        ("/webhooks/qrcode/Fulana/12345678909/cobr", "/webhooks/qrcode/cobr"),
    ],
)
def test_a_url_registered_with_its_route_gets_the_appended_segment_routed(
    running_node: RunningNode, path: str, route: str
) -> None:
    # Registered as ``…/webhooks/qrcode/pix``, the provider appends ``/pix`` once more, and
    # ``/rec`` or ``/cobr`` when the same URL is registered for Pix Automático.
    body = _QR_BODIES[route.rsplit("/", 1)[1]]()
    response = running_node.http.post(path, json=body)
    assert response.status_code == 200, response.text
    assert response.json()["new"] == 1
    with session_scope(running_node.node.engine) as session:
        stored = session.execute(select(col(WebhookDelivery.route))).scalar_one()
    assert stored == route


@pytest.mark.parametrize(
    "path", ["/webhooks/qrcode/loja1", "/webhooks/qrcode/pix/refund", "/Webhooks/QRCode/Pix/Refund"]
)
def test_a_qrcode_path_ending_in_no_route_is_read_as_the_registered_url(
    running_node: RunningNode, path: str
) -> None:
    """``…/webhooks/qrcode/loja1`` registered (a store's name or key in the URL): what the
    provider posts there, or appends no route to, is read as the bare URL reads it, by
    its body. Answered 404, every delivery would count towards disabling the webhook; the
    merchant's segment, which may be personal data, is not kept in the stored route."""
    for body in ({"pix": [pix()]}, {"recs": [{"idRec": "RR1"}]}):
        response = running_node.http.post(path, json=body)
        assert response.status_code == 200, response.text
        assert response.json()["new"] == 1
    with session_scope(running_node.node.engine) as session:
        stored = set(session.execute(select(col(WebhookDelivery.route))).scalars())
        keys = list(session.execute(select(col(InboxItem.key))).scalars())
    assert stored == {"/webhooks/qrcode"}
    assert sorted(k.split(":")[0] for k in keys) == ["pix", "rec"]
    # Without the secret it is refused as any delivery is, not found.
    assert httpx.post(running_node.url + path, json={"pix": [pix()]}).status_code == 401


@pytest.mark.parametrize(
    ("path", "route", "body"),
    [
        ("/Webhooks/QRCode/Pix", "/webhooks/qrcode/pix", lambda: {"pix": [pix()]}),
        ("/WEBHOOKS/QRCODE/PIX/PIX/", "/webhooks/qrcode/pix", lambda: {"pix": [pix()]}),
        ("/webhooks/QRCode", "/webhooks/qrcode", lambda: {"pix": [pix()]}),
        (
            "/webhooks/accounts/transfer/transfer",
            "/webhooks/accounts/transfer",
            lambda: {"data": {"id": "tt-1", "status": "LIQUIDATED"}},
        ),
        (
            "/Webhooks/Accounts/TRANSFER/transfer",
            "/webhooks/accounts/TRANSFER",
            lambda: {"data": {"id": "tt-1", "status": "LIQUIDATED"}},
        ),
    ],
)
def test_a_url_typed_in_another_case_or_with_its_type_doubled_is_routed(
    running_node: RunningNode, path: str, route: str, body: Callable[[], Any]
) -> None:
    """A merchant may type the URL as ``…/Webhooks/QRCode``, or register an accounts type's
    URL to which the type is appended once more: answered 404, every delivery would count
    towards the provider disabling the webhook."""
    response = running_node.http.post(path, json=body())
    assert response.status_code == 200, response.text
    assert response.json()["new"] == 1
    with session_scope(running_node.node.engine) as session:
        stored = session.execute(select(col(WebhookDelivery.route))).scalar_one()
        key = session.execute(select(col(InboxItem.key))).scalar_one()
    assert stored == route
    assert key.startswith(("pix:", "accounts:TRANSFER:tt-1:"))


@pytest.mark.parametrize(
    ("path", "route", "body"),
    [
        ("/api/webhooks/qrcode/pix", "/webhooks/qrcode/pix", lambda: {"pix": [pix()]}),
        ("/api/v1/Webhooks/QRCode//pix/", "/webhooks/qrcode/pix", lambda: {"pix": [pix()]}),
        ("/api/webhooks/qrcode/loja1/pix", "/webhooks/qrcode/pix", lambda: {"pix": [pix()]}),
        (
            "/pixrecon/webhooks/accounts",
            "/webhooks/accounts",
            lambda: {"type": "TRANSFER", "data": {"id": "tt-1", "status": "LIQUIDATED"}},
        ),
        (
            "/pixrecon/webhooks/accounts/transfer",
            "/webhooks/accounts/transfer",
            lambda: {"data": {"id": "tt-1", "status": "LIQUIDATED"}},
        ),
    ],
)
def test_a_path_prefix_a_reverse_proxy_forwards_is_dropped(
    running_node: RunningNode, path: str, route: str, body: Callable[[], Any]
) -> None:
    """The receiver published under ``/api`` by a proxy that forwards the prefix: answered
    404, every delivery would count towards the provider disabling the webhook. The
    prefix is not kept in the stored route; a delivery without its secret is refused."""
    response = running_node.http.post(path, json=body())
    assert response.status_code == 200, response.text
    assert response.json()["new"] == 1
    with session_scope(running_node.node.engine) as session:
        stored = session.execute(select(col(WebhookDelivery.route))).scalar_one()
        key = session.execute(select(col(InboxItem.key))).scalar_one()
    assert stored == route
    assert key.startswith(("pix:", "accounts:TRANSFER:tt-1:"))
    assert httpx.post(running_node.url + path, json=body()).status_code == 401
    # Only a path under a ``webhooks`` segment is a webhook route.
    for elsewhere in ("/api/qrcode/pix", "/api/webhook/accounts", "/api/healthz/pix"):
        assert running_node.http.post(elsewhere, json=body()).status_code == 404, elsewhere


def test_batch_of_three_makes_three_items(running_node: RunningNode) -> None:
    response = running_node.post_pix({"pix": [pix(), pix(), pix(txid=None)]})
    assert response.json() == {"items": 3, "new": 3, "duplicates": 0}
    summary = running_node.wait_processed()
    assert summary["items"] == 3
    assert summary["pix_received"] == 3
    assert _count(running_node, WebhookDelivery) == 1


def test_a_callback_grouping_hundreds_of_pix_is_accepted(running_node: RunningNode) -> None:
    # A provider may group the Pix of one key in one callback, with no limit on how many.
    raw = json.dumps({"pix": [pix() for _ in range(600)]}).encode()
    assert len(raw) > 128 * 1024
    response = running_node.http.post(
        "/webhooks/qrcode/pix", content=raw, headers={"content-type": "application/json"}
    )
    assert response.status_code == 200, response.text
    assert response.json() == {"items": 600, "new": 600, "duplicates": 0}
    assert running_node.wait_processed(timeout=60)["pix_received"] == 600


def test_same_delivery_five_times_is_one_row_and_four_duplicates(
    running_node: RunningNode,
) -> None:
    body = {"pix": [pix()]}
    statuses = [running_node.post_pix(body).status_code for _ in range(5)]
    assert statuses == [200] * 5
    summary = running_node.wait_processed()
    assert summary["pix_received"] == 1
    assert summary["duplicates"] == 4
    with session_scope(running_node.node.engine) as session:
        item = session.execute(select(InboxItem)).scalar_one()
    assert item.webhook_count == 5
    assert item.attempts == 1  # processed once, never redone
    assert _count(running_node, WebhookDelivery) == 5  # every delivery kept for forensics


def test_numbers_and_strings_are_exact(running_node: RunningNode) -> None:
    # 0.1 + 0.2 style values would drift through float; they must land as exact cents.
    raw = b'{"pix":[{"endToEndId":"%s","valor":110.10,"horario":"2026-11-22T10:00:00Z"},' % (
        e2e_id().encode()
    ) + b'{"endToEndId":"%s","valor":"0.29","horario":"2026-11-22T10:00:00Z"}]}' % (
        e2e_id().encode()
    )
    response = running_node.http.post(
        "/webhooks/qrcode/pix", content=raw, headers={"content-type": "application/json"}
    )
    assert response.status_code == 200
    running_node.wait_processed()
    with session_scope(running_node.node.engine) as session:
        cents = sorted(session.execute(select(col(PixReceived.amount_cents))).scalars())
    assert cents == [29, 11010]
    assert sum(Decimal(c) / 100 for c in cents) == Decimal("110.39")


@pytest.mark.parametrize(
    ("content", "content_type", "status", "slug"),
    [
        (b'{"pix": [', "application/json", 400, "malformed-json"),
        (b"pix=1", "application/x-www-form-urlencoded", 415, "unsupported-media-type"),
    ],
)
def test_malformed_bodies_get_problem_json_and_store_nothing(
    running_node: RunningNode, content: bytes, content_type: str, status: int, slug: str
) -> None:
    response = running_node.http.post(
        "/webhooks/qrcode/pix", content=content, headers={"content-type": content_type}
    )
    assert response.status_code == status
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["status"] == status
    assert problem["type"].endswith(slug)
    assert _count(running_node, WebhookDelivery) == 0
    assert _count(running_node, InboxItem) == 0


def test_a_text_body_that_does_not_decode_says_why_beside_its_type(
    running_node: RunningNode,
) -> None:
    response = running_node.http.post(
        "/webhooks/qrcode/pix",
        content=b'{"pix":',
        headers={"content-type": "text/plain; charset=utf-32"},
    )
    assert response.status_code == 415
    detail = response.json()["detail"]
    assert "got text/plain" in detail
    assert "the charset its Content-Type declares" in detail


def test_iso_8859_1_declared_as_utf_8_is_read(running_node: RunningNode) -> None:
    body = pix(pagador={"nome": "José"})
    latin1 = json.dumps({"pix": [body]}, ensure_ascii=False)
    response = running_node.http.post(
        "/webhooks/qrcode/pix",
        content=latin1.encode("iso-8859-1"),
        headers={"content-type": "text/plain; charset=utf-8"},
    )
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    "content_type",
    ["text/plain; charset=utf-8", "application/x-www-form-urlencoded", "application/octet-stream"],
)
def test_json_under_another_declared_type_is_read_all_the_same(
    running_node: RunningNode, content_type: str
) -> None:
    # Some senders label JSON as text; the body, not its label, says what it is.
    raw = b'{"pix":[{"endToEndId":"%s","valor":"12.34","horario":"2026-11-22T10:00:00Z"}]}' % (
        e2e_id().encode()
    )
    response = running_node.http.post(
        "/webhooks/qrcode/pix", content=raw, headers={"content-type": content_type}
    )
    assert response.status_code == 200, response.text
    assert response.json() == {"items": 1, "new": 1, "duplicates": 0}
    assert running_node.wait_processed()["pix_received_cents"] == 1234


@pytest.mark.parametrize(
    ("encode", "content_type"),
    [
        (lambda text: codecs.BOM_UTF8 + text.encode(), "application/json"),
        (lambda text: text.encode("iso-8859-1"), "application/json; charset=ISO-8859-1"),
        (lambda text: text.encode("cp1252"), "application/json; charset=windows-1252"),
        (lambda text: text.encode("iso-8859-1"), "application/json"),
        (lambda text: text.encode("utf-16"), "application/json"),
        # A codec Python knows that is no charset at all: taken as undeclared.
        (lambda text: text.encode(), "application/json; charset=base64"),
    ],
    ids=[
        "utf8-bom",
        "latin1-declared",
        "cp1252-declared",
        "latin1-undeclared",
        "utf16",
        "not-a-charset",
    ],
)
def test_text_in_another_encoding_is_read_as_the_sender_wrote_it(
    running_node: RunningNode, encode: Callable[[str], bytes], content_type: str
) -> None:
    # What the payer's bank printed; the business key is ASCII whatever the encoding.
    one = pix(pagador={"cpf": "12345678909", "nome": "José Conceição"})
    raw = encode(json.dumps({"pix": [one]}, ensure_ascii=False))
    response = running_node.http.post(
        "/webhooks/qrcode/pix", content=raw, headers={"content-type": content_type}
    )
    assert response.status_code == 200, response.text
    running_node.wait_processed()
    with session_scope(running_node.node.engine) as session:
        name = session.execute(select(col(PixReceived.payer_name))).scalar_one()
    assert name == "José Conceição"


@pytest.mark.parametrize(
    ("encoding", "compress"),
    [
        ("gzip", gzip.compress),
        ("deflate", zlib.compress),
        # Bare deflate data under the name, as some clients send it.
        ("deflate", lambda raw: zlib.compress(raw, wbits=-zlib.MAX_WBITS)),
        ("identity", lambda raw: raw),
        # Listed codings were applied in order: undone in reverse.
        ("gzip, identity", gzip.compress),
        ("deflate, gzip", lambda raw: gzip.compress(zlib.compress(raw))),
    ],
    ids=["gzip", "deflate", "raw-deflate", "identity", "gzip-identity", "deflate-then-gzip"],
)
def test_a_compressed_body_is_read_as_it_was_written(
    running_node: RunningNode, encoding: str, compress: Callable[[bytes], bytes]
) -> None:
    raw = json.dumps({"pix": [pix(valor="43.21")]}).encode()
    response = running_node.http.post(
        "/webhooks/qrcode/pix",
        content=compress(raw),
        headers={"content-type": "application/json", "content-encoding": encoding},
    )
    assert response.status_code == 200, response.text
    assert running_node.wait_processed()["pix_received_cents"] == 4321
    with session_scope(running_node.node.engine) as session:
        kept = session.execute(select(col(WebhookDelivery.body))).scalar_one()
    assert kept == raw


# The first bytes of a Zstandard frame (RFC 8878): compressed, in a coding not decoded here.
ZSTD_FRAME = b"\x28\xb5\x2f\xfd\x20\x02\x11\x00\x00{}"


@pytest.mark.parametrize(
    ("content", "encoding", "status", "slug"),
    [
        # Small on the wire, past the limit once inflated.
        (gzip.compress(b" " * 2_000_000), "gzip", 413, "body-too-large"),
        (b"not gzip at all", "gzip", 400, "malformed-json"),
        (gzip.compress(b'{"pix": []}')[:-12], "gzip", 400, "malformed-json"),
        (ZSTD_FRAME, "zstd", 415, "unsupported-media-type"),
        # Compressed data may open with a brace by chance; it does not end as JSON does.
        (b"{\x8b\x00\x80", "br", 415, "unsupported-media-type"),
        (b'{"pix": [', "br", 415, "unsupported-media-type"),
        (gzip.compress(ZSTD_FRAME), "zstd, gzip", 415, "unsupported-media-type"),
    ],
    ids=[
        "bomb",
        "not-gzip",
        "cut-short",
        "unknown-encoding",
        "unknown-opening-as-json",
        "unknown-cut-json",
        "unknown-among-two",
    ],
)
def test_a_body_that_does_not_decompress_is_refused_and_stores_nothing(
    running_node: RunningNode, content: bytes, encoding: str, status: int, slug: str
) -> None:
    response = running_node.http.post(
        "/webhooks/qrcode/pix",
        content=content,
        headers={"content-type": "application/json", "content-encoding": encoding},
    )
    assert response.status_code == status
    assert response.json()["type"].endswith(slug)
    if status == 415:
        coding = encoding.split(",")[0]
        assert response.json()["detail"] == f"unsupported Content-Encoding {coding}"
    assert _count(running_node, InboxItem) == 0


@pytest.mark.parametrize("content", [b'"just a string"', b'{"pix": 42}', b"{}"])
def test_a_body_no_shape_explains_is_kept_as_unsupported(
    running_node: RunningNode, content: bytes
) -> None:
    # Valid JSON from an authenticated sender: refusing it would bring the provider closer
    # to disabling the webhook, so it is kept whole and shown.
    response = running_node.http.post(
        "/webhooks/qrcode/pix", content=content, headers={"content-type": "application/json"}
    )
    assert response.status_code == 200
    assert response.json() == {"items": 1, "new": 1, "duplicates": 0}
    with session_scope(running_node.node.engine) as session:
        item = session.execute(select(InboxItem)).scalar_one()
    assert (item.kind, item.status) == ("unsupported", "unsupported")
    assert item.key.startswith("unsupported:PIX:")
    assert _count(running_node, WebhookDelivery) == 1


def test_pix_missing_required_fields_names_each_violation(running_node: RunningNode) -> None:
    bad = {"txid": "abc", "valor": "12.345"}
    response = running_node.post_pix({"pix": [bad, 42]})
    assert response.status_code == 400
    properties = {v["property"] for v in response.json()["violations"]}
    assert properties == {"/pix/0/endToEndId", "/pix/0/valor", "/pix/0/horario", "/pix/1"}
    # No Pix of it can be read: nothing is stored, the raw body goes to quarantine.
    assert _count(running_node, InboxItem) == 0


def test_a_pix_without_its_key_does_not_cost_the_others_of_its_batch(
    running_node: RunningNode,
) -> None:
    good = pix(devolucoes=[{"valor": "1.00", "status": "DEVOLVIDO"}])
    bad = {"txid": "abc", "valor": "12.345"}
    body = {"pix": [good, bad, 42]}
    # Refusing the batch would refuse the good Pix too, on every retry of the provider's.
    response = running_node.post_pix(body)
    assert response.status_code == 200, response.text
    assert response.json() == {"items": 4, "new": 4, "duplicates": 0}
    assert running_node.post_pix(body).json() == {"items": 4, "new": 0, "duplicates": 4}
    summary = running_node.wait_processed()
    assert summary["pix_received"] == 1
    with session_scope(running_node.node.engine) as session:
        kept = session.execute(
            select(InboxItem.payload, InboxItem.warnings).where(  # type: ignore[call-overload]
                col(InboxItem.kind) == "unsupported"
            )
        ).all()
    by_place = {
        json.loads(warnings)[0]["pointer"]: json.loads(payload) for payload, warnings in kept
    }
    assert by_place == {
        # Kept with its Pix's key: the same refund of another Pix is another item.
        "/pix/0/devolucoes/0": {
            "endToEndId": good["endToEndId"],
            "devolucao": {"valor": "1.00", "status": "DEVOLVIDO"},
        },
        "/pix/1": bad,
        "/pix/2": 42,
    }


@pytest.mark.parametrize("headers", [{"X-Webhook-Secret": "nope"}, {}])
def test_wrong_or_missing_secret_is_401(running_node: RunningNode, headers: dict[str, str]) -> None:
    response = httpx.post(
        running_node.url + "/webhooks/qrcode/pix", json={"pix": [pix()]}, headers=headers
    )
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/problem+json"
    assert _count(running_node, WebhookDelivery) == 0


def _raw_post(url: str, secret: bytes, body: bytes) -> bytes:
    """A request as a sender writes it, whitespace and all (httpx refuses to send that)."""
    where = httpx.URL(url)
    with socket.create_connection((where.host, where.port), timeout=10) as sock:
        sock.sendall(
            b"POST /webhooks/qrcode/pix HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nX-Webhook-Secret:" + secret + b"\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body
        )
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer.split(b"\r\n", 1)[0]


def test_a_secret_padded_with_whitespace_is_the_secret(running_node: RunningNode) -> None:
    # Whitespace around a header's value is not part of it (RFC 9110 §5.5).
    for padded in (f" {SECRET}  ", f"\t{SECRET}\t"):
        body = json.dumps({"pix": [pix()]}).encode()
        assert _raw_post(running_node.url, padded.encode(), body) == b"HTTP/1.1 200 OK"
    inside = f" {SECRET[:4]} {SECRET[4:]}".encode()
    status = _raw_post(running_node.url, inside, json.dumps({"pix": [pix()]}).encode())
    assert status.startswith(b"HTTP/1.1 401")
    assert _count(running_node, WebhookDelivery) == 2


def test_oversize_body_without_content_length_is_413(running_node: RunningNode) -> None:
    limit = running_node.node.settings.max_body_bytes

    def chunks() -> Any:
        for _ in range(limit // 1024 + 2):
            yield b" " * 1024

    response = running_node.http.post(
        "/webhooks/qrcode/pix", content=chunks(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 413
    assert _count(running_node, WebhookDelivery) == 0


def test_healthz_ok_and_metrics_count_deliveries(running_node: RunningNode) -> None:
    running_node.post_pix({"pix": [pix()]})
    health = running_node.http.get("/healthz")
    assert health.status_code == 200
    assert health.json()["database"] == "ok"
    # No provider API in these tests: healthz says notified money cannot be confirmed.
    assert health.json()["confirmation"].startswith("impossible: no provider API")
    metrics = running_node.http.get("/metrics").text
    assert 'pixrecon_webhook_deliveries_total{route="/webhooks/qrcode/pix",status="200"} 1.0' in (
        metrics
    )
    # One delivery, alone in its transaction.
    assert "pixrecon_receiver_commit_batch_deliveries_count 1.0" in metrics
    assert "pixrecon_receiver_commit_batch_deliveries_sum 1.0" in metrics


def test_made_up_paths_add_no_metric_series(running_node: RunningNode) -> None:
    # Anyone can post to any path; a series per path would grow the registry forever.
    for n in range(5):
        anonymous = httpx.post(f"{running_node.url}/webhooks/made-up-{n}/pix", json={})
        assert anonymous.status_code == 404
        accepted = running_node.http.post(f"/webhooks/accounts/made-up-{n}", json={})
        assert accepted.status_code == 200
    metrics = running_node.http.get("/metrics").text
    assert "made-up" not in metrics
    assert 'pixrecon_webhook_deliveries_total{route="unmatched",status="404"} 5.0' in metrics
    assert (
        'pixrecon_webhook_deliveries_total{route="/webhooks/accounts/{kind}",status="200"} 5.0'
    ) in metrics


@pytest.mark.parametrize("depth", [40, 30_000])
def test_deeply_nested_json_is_refused(running_node: RunningNode, depth: int) -> None:
    # 40 levels passes the parser but not the depth check; 30,000 exhausts the parser's
    # recursion — both must be a clean 400, never a 500, and store nothing.
    body = b'{"pix": ' + b"[" * depth + b"]" * depth + b"}"
    response = running_node.http.post(
        "/webhooks/qrcode/pix", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["type"].endswith("malformed-json")
    assert _count(running_node, WebhookDelivery) == 0
    assert _count(running_node, InboxItem) == 0
