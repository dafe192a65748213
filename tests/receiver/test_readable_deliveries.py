"""Deliveries a strict reader would refuse or misread although their meaning is plain: a
CASHOUT whose keys come beside ``data``, a flat one, an infraction keyed ``infractionId``,
a padded type, raw control characters in a string, a member named twice, UTF-8 declared as
ISO-8859-1, a body labelled gzip that is not, Pix Automático posted to the bare registered
URL. Each is answered 200, stored, flagged, and processed as what it is."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import select
from sqlmodel import col

from reconcile.db import session_scope
from reconcile.models import AccountMovement, InboxItem, WebhookDelivery
from tests.conftest import SECRET, RunningNode
from tests.factories import e2e_id, pix

HEADERS = {"X-Webhook-Secret": SECRET, "Content-Type": "application/json"}


def _items(node: RunningNode) -> dict[str, InboxItem]:
    with session_scope(node.node.engine) as session:
        found = session.execute(select(InboxItem)).scalars()
        return {item.key: item for item in found}


def _warned(item: InboxItem) -> dict[str, str]:
    return {w["pointer"]: w["expected"] for w in json.loads(item.warnings or "[]")}


def _post(node: RunningNode, path: str, content: bytes, **headers: str) -> Any:
    answer = node.http.post(path, content=content, headers={**HEADERS, **headers})
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_cashout_with_its_keys_beside_data_is_a_rejected_payout(
    running_node: RunningNode,
) -> None:
    body = {
        "type": "CASHOUT",
        "idempotencyKey": "idem-co-5",
        "endToEndId": e2e_id(),
        "data": {"status": "REJECTED", "message": "conta inexistente"},
        "errorCode": "AC03",
    }
    assert _post(running_node, "/webhooks/accounts", json.dumps(body).encode())["new"] == 1
    flat = {"type": "CASHOUT", "status": "REJECTED", "idempotencyKey": "idem-co-6"}
    assert _post(running_node, "/webhooks/accounts", json.dumps(flat).encode())["new"] == 1
    running_node.wait_processed()
    items = _items(running_node)
    beside = items["accounts:CASHOUT:idem-co-5:REJECTED"]
    assert "/idempotencyKey" in _warned(beside)
    assert "/data" in _warned(items["accounts:CASHOUT:idem-co-6:REJECTED"])
    with session_scope(running_node.node.engine) as session:
        rows = {row.reference: row for row in session.execute(select(AccountMovement)).scalars()}
    assert rows["idem-co-5"].status == "REJECTED"
    assert rows["idem-co-5"].error_code == "AC03"
    assert rows["idem-co-6"].status == "REJECTED"


def test_an_infraction_keyed_infraction_id_and_a_padded_type_are_read(
    running_node: RunningNode,
) -> None:
    infraction = {"type": "INFRACTION", "data": {"infractionId": "inf-9", "status": "OPEN"}}
    _post(running_node, "/webhooks/accounts", json.dumps(infraction).encode())
    padded = {
        "type": " TRANSFER\n",
        "data": {"id": "pad-1", "status": "LIQUIDATED", "payment": {"amount": "1.00"}},
    }
    _post(running_node, "/webhooks/accounts", json.dumps(padded).encode())
    items = _items(running_node)
    assert "/data/infractionId" in _warned(items["accounts:INFRACTION:inf-9:OPEN"])
    assert _warned(items["accounts:TRANSFER:pad-1:LIQUIDATED"])["/type"].startswith(
        "the type without surrounding whitespace"
    )


def test_a_type_in_another_case_is_read_as_the_documented_one_and_flagged(
    running_node: RunningNode,
) -> None:
    data = {"id": "low-1", "status": "LIQUIDATED", "payment": {"amount": "1.00"}}
    lower = {"type": "transfer", "data": data}
    _post(running_node, "/webhooks/accounts", json.dumps(lower).encode())
    running_node.wait_processed()
    item = _items(running_node)["accounts:TRANSFER:low-1:LIQUIDATED"]
    assert _warned(item)["/type"] == "the type in capitals (read as TRANSFER)"
    with session_scope(running_node.node.engine) as session:
        row = session.execute(select(AccountMovement)).scalar_one()
    assert (row.type, row.amount_cents) == ("TRANSFER", 100)


def test_bodies_readable_only_leniently_are_stored_and_flagged(
    running_node: RunningNode,
) -> None:
    tab = pix(infoPagador="pedido\t123")
    raw = json.dumps({"pix": [tab]}).replace("\\t", "\t").encode()
    _post(running_node, "/webhooks/qrcode/pix", raw)
    first, second = pix(), pix()
    twice = f'{{"pix": [{json.dumps(first)}], "pix": [{json.dumps(second)}]}}'.encode()
    assert _post(running_node, "/webhooks/qrcode/pix", twice)["new"] == 2
    named = pix(pagador={"nome": "João Conceição"})
    latin = json.dumps({"pix": [named]}, ensure_ascii=False).encode()
    _post(
        running_node,
        "/webhooks/qrcode/pix",
        latin,
        **{"Content-Type": "application/json; charset=ISO-8859-1"},
    )
    plain = pix()
    _post(
        running_node,
        "/webhooks/qrcode/pix",
        json.dumps({"pix": [plain]}).encode(),
        **{"Content-Encoding": "gzip"},
    )
    items = _items(running_node)
    assert "control characters" in _warned(items[f"pix:{tab['endToEndId']}"])["/"]
    assert json.loads(items[f"pix:{tab['endToEndId']}"].payload)["infoPagador"] == "pedido\t123"
    for repeated in (first, second):
        assert "pix repeated" in _warned(items[f"pix:{repeated['endToEndId']}"])["/"]
    stored = items[f"pix:{named['endToEndId']}"]
    assert json.loads(stored.payload)["pagador"]["nome"] == "João Conceição"
    assert "read as UTF-8" in _warned(stored)["/"]
    assert "came uncompressed" in _warned(items[f"pix:{plain['endToEndId']}"])["/"]


@pytest.mark.parametrize(
    ("encoding", "named"),
    [
        ("br", "br"),
        ("zstd", "zstd"),
        ("compress", "compress"),
        ("gzip, br", "br"),
        ("x-" + "z" * 40, "another coding"),
    ],
)
def test_json_labelled_with_a_coding_not_decoded_here_is_read_and_flagged(
    running_node: RunningNode, encoding: str, named: str
) -> None:
    """A plainly JSON body under ``Content-Encoding: br`` (``zstd``, ``compress``) was never
    compressed: read as it came, as one labelled gzip is, rather than refused 415."""
    plain = pix(valor="12.34")
    raw = b" " + json.dumps({"pix": [plain]}).encode() + b"\n"
    assert _post(running_node, "/webhooks/qrcode/pix", raw, **{"Content-Encoding": encoding}) == {
        "items": 1,
        "new": 1,
        "duplicates": 0,
    }
    assert running_node.wait_processed()["pix_received_cents"] == 1234
    item = _items(running_node)[f"pix:{plain['endToEndId']}"]
    assert _warned(item) == {
        "/": f"a body compressed as its Content-Encoding says, {named} (it came uncompressed)"
    }
    with session_scope(running_node.node.engine) as session:
        assert session.execute(select(col(WebhookDelivery.body))).scalar_one() == raw


FORM = "application/x-www-form-urlencoded"


@pytest.mark.parametrize(
    "encode",
    [
        lambda text: urllib.parse.urlencode({"payload": text}),
        lambda text: urllib.parse.urlencode({"data": text}, quote_via=urllib.parse.quote),
        lambda text: "json=" + text,
    ],
    ids=["payload-plus-for-spaces", "data-percent", "json-unencoded"],
)
def test_json_posted_as_the_one_field_of_a_form_is_read_and_flagged(
    running_node: RunningNode, encode: Callable[[str], str]
) -> None:
    """Some gateways post the notification as a form's one field: its JSON is read, every
    item flagged, and the body kept as it came."""
    first, second = pix(valor="1.25", pagador={"nome": "João"}), pix(valor="2.50")
    raw = encode(json.dumps({"pix": [first, second]}, ensure_ascii=False)).encode()
    answer = _post(running_node, "/webhooks/qrcode/pix", raw, **{"Content-Type": FORM})
    assert answer == {"items": 2, "new": 2, "duplicates": 0}
    assert running_node.wait_processed()["pix_received_cents"] == 375
    items = _items(running_node)
    for sent in (first, second):
        item = items[f"pix:{sent['endToEndId']}"]
        assert _warned(item) == {"/": "a JSON body (it came as the one field of a form)"}
    assert json.loads(items[f"pix:{first['endToEndId']}"].payload)["pagador"]["nome"] == "João"
    with session_scope(running_node.node.engine) as session:
        assert session.execute(select(col(WebhookDelivery.body))).scalar_one() == raw


@pytest.mark.parametrize(
    "raw",
    [b"pix=1", b"a=1&payload=%7B%7D", b"payload=%7B%22pix%22%3A", b"payload"],
    ids=["not-json", "two-fields", "cut-json", "no-value"],
)
def test_other_forms_are_still_refused_saying_why(running_node: RunningNode, raw: bytes) -> None:
    answer = running_node.http.post(
        "/webhooks/qrcode/pix", content=raw, headers={**HEADERS, "Content-Type": FORM}
    )
    assert answer.status_code == 415, answer.text
    assert "nor a form whose one field holds it" in answer.json()["detail"]
    assert _items(running_node) == {}


def test_pix_one_array_deeper_than_documented_are_read_where_they_are(
    running_node: RunningNode,
) -> None:
    first, second = pix(), pix()
    nested = json.dumps({"pix": [[first, second]]}).encode()
    assert _post(running_node, "/webhooks/qrcode/pix", nested)["new"] == 2
    items = _items(running_node)
    for one in (first, second):
        assert _warned(items[f"pix:{one['endToEndId']}"])["/pix/0"] == (
            "one Pix object, not an array of them"
        )


def test_pix_automatico_posted_to_the_bare_url_is_read_as_what_it_is(
    running_node: RunningNode,
) -> None:
    rec = {"recs": [{"idRec": "RR1234567820261128abcdefghij", "status": "APROVADA"}]}
    _post(running_node, "/webhooks/qrcode?ignorar=/rec", json.dumps(rec).encode())
    cobr = {"cobsr": [{"txid": "cobrquery0000000000000000000001", "status": "CONCLUIDA"}]}
    _post(running_node, "/webhooks/qrcode?ignorar=/cobr", json.dumps(cobr).encode())
    kinds = {item.kind for item in _items(running_node).values()}
    assert kinds == {"rec", "cobr"}


@pytest.mark.parametrize(
    "path",
    ["/webhooks/qrcode/pix?ignorar=/{kind}", "/webhooks/qrcode/pix", "/webhooks/qrcode/{other}"],
    ids=["route-and-ignorar", "wrapper-at-pix", "wrapper-at-the-other"],
)
def test_pix_automatico_posted_to_another_route_is_read_as_what_it_is(
    running_node: RunningNode, path: str
) -> None:
    """A URL registered with its route and ``?ignorar=`` for every webhook gets what the
    provider appends in the query string; the wrapper says what a body is wherever it came."""
    rec = {"recs": [{"idRec": "RR1234567820261128abcdefghij", "status": "APROVADA"}]}
    cobr = {"cobsr": [{"txid": "cobrquery0000000000000000000001", "status": "CONCLUIDA"}]}
    _post(running_node, path.format(kind="rec", other="cobr"), json.dumps(rec).encode())
    _post(running_node, path.format(kind="cobr", other="rec"), json.dumps(cobr).encode())
    one = pix()
    _post(running_node, "/webhooks/qrcode/rec", json.dumps({"pix": [one]}).encode())
    items = _items(running_node)
    assert {item.kind for item in items.values()} == {"rec", "cobr", "pix"}
    assert not any(item.warnings for item in items.values())


def test_a_json_document_sent_as_a_json_string_is_read_and_flagged(
    running_node: RunningNode,
) -> None:
    """Some gateways encode the body once more: ``"{\\"pix\\": [...]}"``. Its document is
    read, every item flagged at ``/``, and the body kept as it came."""
    first, second = pix(valor="1.25"), pix(valor="2.50")
    raw = json.dumps(json.dumps({"pix": [first, second]})).encode()
    assert _post(running_node, "/webhooks/qrcode/pix", raw) == {
        "items": 2,
        "new": 2,
        "duplicates": 0,
    }
    assert running_node.wait_processed()["pix_received_cents"] == 375
    items = _items(running_node)
    for sent in (first, second):
        assert _warned(items[f"pix:{sent['endToEndId']}"]) == {
            "/": "a JSON document (it came as a JSON string holding one)"
        }
    with session_scope(running_node.node.engine) as session:
        assert session.execute(select(col(WebhookDelivery.body))).scalar_one() == raw
    # A string that holds no JSON object or array is kept whole, as ever.
    for text in ("teste", "{not json", "[1, 2"):
        _post(running_node, "/webhooks/qrcode/pix", json.dumps(text).encode())
    unsupported = [i for i in _items(running_node).values() if i.status == "unsupported"]
    assert sorted(json.loads(i.payload) for i in unsupported) == ["[1, 2", "teste", "{not json"]
    # The document inside is held to the body's depth limit.
    deep = json.dumps("[" * 40 + "]" * 40).encode()
    answer = running_node.http.post("/webhooks/qrcode/pix", content=deep, headers=HEADERS)
    assert answer.status_code == 400, answer.text


def test_accounts_notifications_as_the_sandbox_and_batching_senders_write_them(
    running_node: RunningNode,
) -> None:
    """No ``type`` beside ``data``, the type in ``data.webhookType`` (as the sandbox's
    movements carry it); and a bare array of notifications, one item each."""
    data = {
        "id": "wt-1",
        "status": "LIQUIDATED",
        "payment": {"amount": "1.00"},
        "webhookType": "TRANSFER",
    }
    _post(running_node, "/webhooks/accounts", json.dumps({"data": data}).encode())
    batch = [
        {"type": "TRANSFER", "data": {**data, "id": "arr-1"}},
        {"type": "RECEIVE", "data": {**data, "id": "arr-2", "webhookType": "RECEIVE"}},
    ]
    assert _post(running_node, "/webhooks/accounts", json.dumps(batch).encode())["new"] == 2
    running_node.wait_processed()
    items = _items(running_node)
    assert "/data/webhookType" in _warned(items["accounts:TRANSFER:wt-1:LIQUIDATED"])
    assert "/" in _warned(items["accounts:RECEIVE:arr-2:LIQUIDATED"])
    with session_scope(running_node.node.engine) as session:
        found = session.execute(select(AccountMovement)).scalars()
        rows = {row.reference: row.type for row in found}
    assert rows == {"wt-1": "TRANSFER", "arr-1": "TRANSFER", "arr-2": "RECEIVE"}


def test_an_envelope_with_capitalised_names_is_read_and_processed(
    running_node: RunningNode,
) -> None:
    """``{"Type": …, "Data": {"Id": …}}``: the envelope's names spelt otherwise are read as
    a key's are, flagged where they came, and the movement is processed as what it is (kept
    as unsupported, a payout would never be matched)."""
    data = {"Id": "cap-1", "status": "LIQUIDATED", "payment": {"amount": "1.00"}}
    _post(
        running_node, "/webhooks/accounts", json.dumps({"Type": "TRANSFER", "Data": data}).encode()
    )
    own = {"id": "cap-2", "status": "LIQUIDATED", "WebhookType": "RECEIVE"}
    _post(running_node, "/webhooks/accounts", json.dumps({"DATA": own}).encode())
    running_node.wait_processed()
    items = _items(running_node)
    typed = items["accounts:TRANSFER:cap-1:LIQUIDATED"]
    assert typed.status == "processed"
    assert set(_warned(typed)) == {"/Type", "/Data", "/Data/Id"}
    assert "/DATA/WebhookType" in _warned(items["accounts:RECEIVE:cap-2:LIQUIDATED"])
    with session_scope(running_node.node.engine) as session:
        found = session.execute(select(AccountMovement)).scalars()
        rows = {row.reference: row.type for row in found}
    assert rows == {"cap-1": "TRANSFER", "cap-2": "RECEIVE"}


def test_documents_sent_one_after_another_are_each_read(running_node: RunningNode) -> None:
    """Newline-delimited documents, as a relay that batches deliveries sends them, and one
    followed by the NUL byte a C sender posts with its string: each document is JSON with
    readable keys, refused the delivery would be retried until the webhook is disabled."""
    first, second = pix(), pix()
    lines = b"\n".join(json.dumps({"pix": [p]}).encode() for p in (first, second)) + b"\n"
    answer = _post(
        running_node, "/webhooks/qrcode/pix", lines, **{"Content-Type": "application/x-ndjson"}
    )
    assert answer["new"] == 2
    notifications = [
        {
            "type": kind,
            "data": {"id": f"nd-{kind}", "status": "LIQUIDATED", "payment": {"amount": 1}},
        }
        for kind in ("TRANSFER", "RECEIVE")
    ]
    joined = b"".join(json.dumps(n).encode() for n in notifications)
    assert _post(running_node, "/webhooks/accounts", joined)["new"] == 2
    terminated = pix()
    _post(running_node, "/webhooks/qrcode/pix", json.dumps({"pix": [terminated]}).encode() + b"\0")
    items = _items(running_node)
    for batched in (first, second):
        said = _warned(items[f"pix:{batched['endToEndId']}"])["/"]
        assert said.startswith('one {"pix": [...]} body, not an array of them; ')
        assert "it came as 2 one after another" in said
    assert {
        "accounts:TRANSFER:nd-TRANSFER:LIQUIDATED",
        "accounts:RECEIVE:nd-RECEIVE:LIQUIDATED",
    } <= set(items)
    assert "NUL bytes" in _warned(items[f"pix:{terminated['endToEndId']}"])["/"]
    # What is no JSON after the first document is still no JSON; nor are more documents
    # than any batch holds.
    for broken in (b'{"pix": []} garbage', b'{"pix": []}\n{"pix": ', b"{}\n" * 1001, b"\0"):
        refused = running_node.http.post("/webhooks/qrcode/pix", content=broken, headers=HEADERS)
        assert refused.status_code == 400, broken
    running_node.wait_processed()
    assert {i.status for i in _items(running_node).values()} == {"processed"}
