"""Text as senders really write it: a lone UTF-16 surrogate (a JavaScript sender that cut
an emoji in half) and whitespace around a business key cost no delivery. The raw body is
stored as it came; the item holds readable text, is keyed by what the key means, and says
where it was mended — on SQLite and PostgreSQL, through the real app."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, select
from sqlmodel import col

from reconcile.db import session_scope
from reconcile.models import AccountMovement, InboxItem, PixReceived, PixRefund, WebhookDelivery
from reconcile.queries import inbox_item_view, items_by_ref
from tests.factories import e2e_id, pix
from tests.receiver.test_tolerant_reader import InProcess, receiver
from tests.receiver.test_tolerant_reader import _process_pending as _process

E2E = "E12345678202611261500ABCDEFGHIJK"
SURROGATE = "Unicode text (an unpaired UTF-16 surrogate was replaced by U+FFFD)"


@pytest.fixture
def client(engine: Engine) -> Iterator[InProcess]:
    with receiver(engine) as client:
        yield client


def _post(client: InProcess, route: str, body: bytes) -> httpx.Response:
    return client.post(route, content=body, headers={"content-type": "application/json"})


def _shown(engine: Engine) -> dict[str, dict[str, Any]]:
    """What ``pixrecon events show`` shows of each item, with its stored payload."""
    with session_scope(engine) as session:
        return {
            item.key: {**inbox_item_view(item), "payload": json.loads(item.payload)}
            for item in session.execute(select(InboxItem)).scalars()
        }


def test_a_lone_surrogate_in_free_text_is_mended_and_flagged(
    engine: Engine, client: InProcess
) -> None:
    body = (
        b'{"pix":[{"endToEndId":"%s","valor":"1.00","horario":"2026-11-26T15:00:00Z",'
        b'"infoPagador":"\\ud800x"}]}' % E2E.encode()
    )
    response = _post(client, "/webhooks/qrcode/pix", body)
    assert response.status_code == 200, response.text
    with session_scope(engine) as session:
        assert session.execute(select(col(WebhookDelivery.body))).scalar_one() == body
    shown = _shown(engine)[f"pix:{E2E}"]
    assert shown["payload"]["infoPagador"] == "\ufffdx"
    assert shown["warnings"] == [{"pointer": "/infoPagador", "expected": SURROGATE}]
    assert _process(engine) == []
    with session_scope(engine) as session:
        assert session.execute(select(col(PixReceived.amount_cents))).scalar_one() == 100


def test_lone_surrogates_anywhere_are_flagged_where_each_item_holds_them(
    engine: Engine, client: InProcess
) -> None:
    one, two = e2e_id(1), e2e_id(2)
    refund = {"id": "d1\ud800", "valor": "1.00", "status": "DEVOLVIDO"}
    named = pix(e2e=two, pagador={"nome": "Jo\udc00o", "\ud83d": 1}, devolucoes=[refund])
    body = json.dumps({"pix": [pix(e2e=one), named]}).encode()
    assert b"\\ud800" in body
    assert _post(client, "/webhooks/qrcode/pix", body).status_code == 200
    shown = _shown(engine)
    assert shown[f"pix:{one}"]["warnings"] == []
    assert shown[f"pix:{two}"]["warnings"] == [
        {"pointer": "/pagador/nome", "expected": SURROGATE},
        {"pointer": "/pagador/\ufffd", "expected": SURROGATE},
        {"pointer": "/devolucoes/0/id", "expected": SURROGATE},
    ]
    # The key takes the mended text, never the surrogate, which no text column holds.
    refund_item = shown[f"refund:{two}:d1\ufffd:DEVOLVIDO"]
    assert refund_item["warnings"] == [{"pointer": "/devolucao/id", "expected": SURROGATE}]
    assert refund_item["payload"]["devolucao"]["id"] == "d1\ufffd"
    assert _process(engine) == []
    with session_scope(engine) as session:
        assert session.execute(select(col(PixRefund.refund_id))).scalar_one() == "d1\ufffd"


def test_a_lone_surrogate_in_an_end_to_end_id_leaves_the_pix_without_its_key(
    engine: Engine, client: InProcess
) -> None:
    broken = e2e_id(3)[:-1] + "\ud800"
    body = json.dumps({"pix": [pix(e2e=e2e_id(1)), pix(e2e=broken)]}).encode()
    assert _post(client, "/webhooks/qrcode/pix", body).status_code == 200
    shown = _shown(engine)
    (kept,) = (item for key, item in shown.items() if key.startswith("unsupported:PIX:"))
    assert kept["payload"]["endToEndId"] == broken[:-1] + "\ufffd"
    assert {"pointer": "/endToEndId", "expected": SURROGATE} in kept["warnings"]
    assert kept["warnings"][0]["pointer"] == "/pix/1/endToEndId"

    # Alone, it is still a key that is there, though not as documented: kept, not refused
    # (the same Pix as the one kept above).
    alone = json.dumps({"pix": [pix(e2e=broken)]}).encode()
    response = _post(client, "/webhooks/qrcode/pix", alone)
    assert response.status_code == 200, response.text
    assert response.json() == {"items": 1, "new": 0, "duplicates": 1}


def test_an_accounts_array_flags_only_the_object_that_held_the_surrogate(
    engine: Engine, client: InProcess
) -> None:
    def movement(n: int, pix_key: str) -> dict[str, Any]:
        return {
            "id": f"t-{n}",
            "status": "LIQUIDATED",
            "pixKey": pix_key,
            "payment": {"currency": "BRL", "amount": "2.00"},
        }

    body = {"type": "TRANSFER", "data": [movement(1, "a\ud800"), movement(2, "b")]}
    assert _post(client, "/webhooks/accounts", json.dumps(body).encode()).status_code == 200
    shown = _shown(engine)
    assert {"pointer": "/data/pixKey", "expected": SURROGATE} in shown[
        "accounts:TRANSFER:t-1:LIQUIDATED"
    ]["warnings"]
    assert all(
        w["expected"] != SURROGATE for w in shown["accounts:TRANSFER:t-2:LIQUIDATED"]["warnings"]
    )
    assert _process(engine) == []


@pytest.mark.parametrize("padded", [f" {E2E} ", f"{E2E}\n", f"\t{E2E}\r\n"])
def test_whitespace_around_a_business_key_is_stripped_and_flagged(
    engine: Engine, client: InProcess, padded: str
) -> None:
    first = {
        "pix": [pix(e2e=padded, devolucoes={"id": " d1 ", "valor": "1.00", "status": "DEVOLVIDO"})]
    }
    response = client.post("/webhooks/qrcode/pix", json=first)
    assert response.status_code == 200, response.text
    shown = _shown(engine)
    assert set(shown) == {f"pix:{E2E}", f"refund:{E2E}:d1:DEVOLVIDO"}
    assert [w["pointer"] for w in shown[f"pix:{E2E}"]["warnings"]] == ["/endToEndId"]
    assert [w["pointer"] for w in shown[f"refund:{E2E}:d1:DEVOLVIDO"]["warnings"]] == [
        "/devolucao/id"
    ]
    assert shown[f"pix:{E2E}"]["refs"]["endToEndId"] == [E2E]

    # A retry without the whitespace is the same Pix and the same refund.
    again = {"pix": [pix(e2e=E2E, devolucoes={"id": "d1", "valor": "1.00", "status": "DEVOLVIDO"})]}
    assert client.post("/webhooks/qrcode/pix", json=again).json() == {
        "items": 2,
        "new": 0,
        "duplicates": 2,
    }
    assert _process(engine) == []
    with session_scope(engine) as session:
        assert session.execute(select(col(PixReceived.end_to_end_id))).scalar_one() == E2E
        assert session.execute(select(col(PixRefund.refund_id))).scalar_one() == "d1"
        assert len(items_by_ref(session, E2E)) == 2


def test_whitespace_around_an_accounts_key_is_stripped(engine: Engine, client: InProcess) -> None:
    body = {
        "type": "TRANSFER",
        "data": {"id": " 98765\n", "status": "LIQUIDATED", "payment": {"amount": "1.00"}},
    }
    assert client.post("/webhooks/accounts", json=body).status_code == 200
    shown = _shown(engine)
    assert [w["pointer"] for w in shown["accounts:TRANSFER:98765:LIQUIDATED"]["warnings"]] == [
        "/data/id"
    ]
    assert _process(engine) == []
    with session_scope(engine) as session:
        assert session.execute(select(col(AccountMovement.reference))).scalar_one() == "98765"


@pytest.mark.parametrize(
    "data",
    [
        {"payment": None},
        {},
        {"payment": {"currency": "BRL"}},
        {"payment": {"currency": "BRL", "amount": None}},
    ],
    ids=["payment-null", "no-payment", "no-amount", "amount-null"],
)
def test_an_accounts_movement_without_its_amount_is_flagged(
    engine: Engine, client: InProcess, data: dict[str, Any]
) -> None:
    body = {"type": "TRANSFER", "data": {"id": "t-1", "status": "LIQUIDATED", **data}}
    assert client.post("/webhooks/accounts", json=body).status_code == 200
    (shown,) = _shown(engine).values()
    assert [w["pointer"] for w in shown["warnings"]] == ["/data/payment/amount"]
    assert _process(engine) == []
    with session_scope(engine) as session:
        assert session.execute(select(col(AccountMovement.amount_cents))).scalar_one() is None


@pytest.mark.parametrize(
    "malformed",
    [E2E[:-1], E2E[:20] + "-" + E2E[21:], f" {E2E}-\n"],
    ids=["31-characters", "hyphen", "padded-hyphen"],
)
def test_a_pix_whose_key_is_not_as_documented_is_kept_whole_and_found_by_it(
    engine: Engine, client: InProcess, malformed: str
) -> None:
    """Alone in its delivery, a Pix whose ``endToEndId`` is there but not 32 letters and
    digits is kept as unsupported (refused, the delivery would be retried as it is until
    the provider disabled the webhook), flagged at its key, and found by it."""
    body = json.dumps({"pix": [pix(e2e=malformed)]}).encode()
    response = _post(client, "/webhooks/qrcode/pix", body)
    assert response.status_code == 200, response.text
    assert response.json() == {"items": 1, "new": 1, "duplicates": 0}
    (shown,) = _shown(engine).values()
    assert (shown["kind"], shown["status"]) == ("unsupported", "unsupported")
    assert shown["payload"]["endToEndId"] == malformed
    (warning,) = shown["warnings"]
    assert warning["pointer"] == "/pix/0/endToEndId"
    assert "[a-zA-Z0-9]{32}" in warning["expected"]
    assert malformed.strip() not in warning["expected"]
    with session_scope(engine) as session:
        (found,) = items_by_ref(session, malformed.strip())
        assert found.kind == "unsupported"
    assert _process(engine) == []
    with session_scope(engine) as session:
        assert session.execute(select(col(PixReceived.end_to_end_id))).first() is None


def test_refunds_whose_rtr_id_is_not_as_documented_are_kept_and_found_by_it(
    engine: Engine, client: InProcess
) -> None:
    """A refund's ``rtrId`` there but not as documented keeps a Pix without its own key
    (the delivery's only one) from being refused, as a valid one does; under a Pix with
    its key, the refund (without ``id``) is kept with the Pix's key, flagged at its
    ``rtrId``, and found by it as well."""
    keyless = pix(e2e=E2E)
    del keyless["endToEndId"]
    keyless["devolucoes"] = [{"rtrId": "D1234-5", "valor": "1.00", "status": "DEVOLVIDO"}]
    response = _post(client, "/webhooks/qrcode/pix", json.dumps({"pix": [keyless]}).encode())
    assert response.status_code == 200, response.text

    keyed = pix(e2e=E2E, devolucoes={"rtrId": "D9876-5", "valor": "1.00", "status": "DEVOLVIDO"})
    response = _post(client, "/webhooks/qrcode/pix", json.dumps({"pix": [keyed]}).encode())
    assert response.status_code == 200, response.text
    with session_scope(engine) as session:
        assert [i.kind for i in items_by_ref(session, "D1234-5")] == ["unsupported"]
        (refund,) = items_by_ref(session, "D9876-5", status="unsupported")
        assert json.loads(refund.warnings or "[]")[0]["pointer"] == "/pix/0/devolucoes/rtrId"


def test_a_recurring_charge_whose_txid_is_not_as_documented_is_kept_whole(
    engine: Engine, client: InProcess
) -> None:
    body = {
        "cobsr": [{"idRec": "RR1234567820240115abcdefghijk", "txid": "tx-1", "status": "ATIVA"}]
    }
    response = _post(client, "/webhooks/qrcode/cobr", json.dumps(body).encode())
    assert response.status_code == 200, response.text
    (shown,) = _shown(engine).values()
    assert shown["status"] == "unsupported"
    assert [w["pointer"] for w in shown["warnings"]] == ["/cobsr/0/txid"]
    with session_scope(engine) as session:
        assert len(items_by_ref(session, "tx-1")) == 1


@pytest.mark.parametrize("key", [None, {}, {"id": E2E}, 3.5, True, "x" * 120], ids=repr)
def test_a_pix_whose_key_is_no_reference_is_still_refused(
    engine: Engine, client: InProcess, key: Any
) -> None:
    body = json.dumps({"pix": [{**pix(e2e=E2E), "endToEndId": key}]}).encode()
    response = _post(client, "/webhooks/qrcode/pix", body)
    assert response.status_code == 400, response.text
    assert response.json()["violations"][0]["property"] == "/pix/0/endToEndId"
    with session_scope(engine) as session:
        assert session.execute(select(InboxItem)).first() is None
