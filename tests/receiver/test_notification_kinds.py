"""Every notification kind and body shape, from fixtures written from docs/design.md §4 and the
BCB spec examples: each lands as the expected inbox items, repeats are counted, and the
workers turn them into domain rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlmodel import SQLModel

from reconcile.db import session_scope
from reconcile.models import (
    ROUTE_MAX,
    AccountMovement,
    InboxItem,
    Infraction,
    PayoutReturn,
    PixReceived,
    PixRefund,
    QuarantinedDelivery,
    Recurrence,
    RecurringCharge,
    WebhookDelivery,
)
from reconcile.payloads.tolerant import ONE_AS_ARRAY
from tests.conftest import RunningNode, wait_for

FIXTURES = Path(__file__).parents[1] / "fixtures"


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


CASES = [
    (
        "qrcode/pix_bcb_examples.json",
        "/webhooks/qrcode/pix",
        {
            "pix:E12345678202009091221kkkkkkkkkkk": "pix",
            "refund:D12345678202009091221abcdf098765:EM_PROCESSAMENTO": "pix_refund",
            "pix:E87654321202009091221dfghi123456": "pix",
        },
    ),
    (
        "qrcode/pix_single_object.json",
        "/webhooks/qrcode/pix",
        {"pix:E18236120202611221500s0000000001": "pix"},
    ),
    ("qrcode/pix_flat.json", "/webhooks/qrcode", {"pix:E18236120202611221500f0000000002": "pix"}),
    (
        "qrcode/pix_bare_array.json",
        "/webhooks/qrcode/pix",
        {
            "pix:E18236120202611221500a0000000003": "pix",
            "pix:E18236120202611221500a0000000004": "pix",
        },
    ),
    (
        "qrcode/pix_refunds_array.json",
        "/webhooks/qrcode/pix",
        {
            "pix:E18236120202611221500r0000000005": "pix",
            "refund:D18236120202611221530r0000000001:DEVOLVIDO": "pix_refund",
            "refund:D18236120202611221540r0000000002:EM_PROCESSAMENTO": "pix_refund",
        },
    ),
    (
        "qrcode/rec_bcb_example.json",
        "/webhooks/qrcode/rec",
        {"rec:RR1026652320240821lab77511abf:APROVADA:2024-08-22T12:43:53.337Z": "rec"},
    ),
    (
        "qrcode/cobr_bcb_example.json",
        "/webhooks/qrcode/cobr",
        {"cobr:3136957d93134f2184b369e8f1c0729d:ATIVA:1.SOLICITADA": "cobr"},
    ),
    (
        "accounts/transfer.json",
        "/webhooks/accounts",
        {"accounts:TRANSFER:98765:LIQUIDATED": "accounts.transfer"},
    ),
    (
        "accounts/receive.json",
        "/webhooks/accounts/receive",
        {"accounts:RECEIVE:rcv-000123:LIQUIDATED": "accounts.receive"},
    ),
    (
        "accounts/refund.json",
        "/webhooks/accounts",
        {"accounts:REFUND:rcv-000123:PARTIALLY_REFUNDED:r1": "accounts.refund"},
    ),
    (
        "accounts/cashout_minimal.json",
        "/webhooks/accounts/cashout",
        {"accounts:CASHOUT:payout-2026-11-22-0002:REJECTED": "accounts.cashout"},
    ),
    (
        "accounts/infraction.json",
        "/webhooks/accounts",
        {"accounts:INFRACTION:inf-5566:OPEN": "accounts.infraction"},
    ),
]


def _items(node: RunningNode) -> dict[str, InboxItem]:
    with session_scope(node.node.engine) as session:
        return {i.key: i for i in session.execute(select(InboxItem)).scalars()}


def _rows(node: RunningNode, model: type[SQLModel]) -> list[Any]:
    with session_scope(node.node.engine) as session:
        return list(session.execute(select(model)).scalars())


@pytest.mark.parametrize(("fixture", "path", "expected"), CASES, ids=[c[0] for c in CASES])
def test_each_kind_lands_as_expected_items_and_repeats_are_counted(
    running_node: RunningNode, fixture: str, path: str, expected: dict[str, str]
) -> None:
    body = load(fixture)
    first = running_node.http.post(path, json=body)
    assert first.status_code == 200, first.text
    assert first.json() == {"items": len(expected), "new": len(expected), "duplicates": 0}
    again = running_node.http.post(path, json=body)
    assert again.json() == {"items": len(expected), "new": 0, "duplicates": len(expected)}
    running_node.wait_processed()
    items = _items(running_node)
    assert {key: item.kind for key, item in items.items()} == expected
    for item in items.values():
        assert item.status == "processed", item.error
        assert item.webhook_count == 2


@pytest.mark.parametrize("fixture", ["accounts/invoice.json", "accounts/crypto.json"])
def test_unsupported_types_are_stored_and_acknowledged(
    running_node: RunningNode, fixture: str
) -> None:
    for _ in range(2):
        response = running_node.http.post("/webhooks/accounts", json=load(fixture))
        assert response.status_code == 200
    items = list(_items(running_node).values())
    assert len(items) == 1
    assert items[0].kind == "unsupported"
    assert items[0].status == "unsupported"
    assert items[0].duplicates == 1
    assert json.loads(items[0].payload) == load(fixture)


def test_body_without_type_takes_it_from_the_path(running_node: RunningNode) -> None:
    data = load("accounts/transfer.json")["data"]
    response = running_node.http.post("/webhooks/accounts/transfer", json={"data": data})
    assert response.status_code == 200
    assert set(_items(running_node)) == {"accounts:TRANSFER:98765:LIQUIDATED"}


def test_a_path_longer_than_its_column_is_stored_cut_not_refused(
    running_node: RunningNode,
) -> None:
    data = load("accounts/transfer.json")["data"]
    path = "/webhooks/accounts/" + "k" * 400
    response = running_node.http.post(path, json={"type": "TRANSFER", "data": data})
    assert response.status_code == 200, response.text
    with session_scope(running_node.node.engine) as session:
        route = session.execute(select(WebhookDelivery.route)).scalar_one()  # type: ignore[call-overload]
    assert route.startswith("/webhooks/accounts/kkk")
    assert len(route) == ROUTE_MAX
    # Refused (a wrong secret), it is quarantined with the path cut the same way.
    refused = running_node.http.post(
        path, json={"type": "TRANSFER", "data": data}, headers={"X-Webhook-Secret": "wrong"}
    )
    assert refused.status_code == 401

    def quarantined() -> list[str]:
        with session_scope(running_node.node.engine) as session:
            return list(session.execute(select(QuarantinedDelivery.route)).scalars())  # type: ignore[call-overload]

    wait_for(lambda: len(quarantined()) == 1)
    assert quarantined() == [route]


def test_a_body_whose_type_the_path_contradicts_is_read_as_the_body_says_and_flagged(
    running_node: RunningNode,
) -> None:
    data = load("accounts/transfer.json")["data"]
    response = running_node.http.post(
        "/webhooks/accounts/receive", json={"type": "TRANSFER", "data": data}
    )
    assert response.status_code == 200
    (item,) = _items(running_node).values()
    assert item.key == "accounts:TRANSFER:98765:LIQUIDATED"
    assert json.loads(item.warnings or "[]") == [
        {"pointer": "/type", "expected": "the type the path names, RECEIVE (read as the body's)"}
    ]


def test_a_type_appended_to_a_url_registered_with_another_is_stored_not_404(
    running_node: RunningNode,
) -> None:
    """``…/webhooks/accounts/transfer`` registered, the provider appends the type it
    notifies: answered 404, each delivery would count towards disabling the webhook."""
    data = load("accounts/transfer.json")["data"]
    receive = {**data, "id": "rcv-1", "webhookType": "RECEIVE"}
    for path, body in (
        ("/webhooks/accounts/transfer/receive", {"type": "RECEIVE", "data": receive}),
        ("/webhooks/accounts/Transfer/receive/", {"data": {**receive, "id": "rcv-2"}}),
        ("/webhooks/accounts/maria/transfer", {"data": {**data, "webhookType": None}}),
    ):
        response = running_node.http.post(path, json=body)
        assert response.status_code == 200, (path, response.text)
    items = _items(running_node)
    assert set(items) == {
        "accounts:RECEIVE:rcv-1:LIQUIDATED",
        "accounts:RECEIVE:rcv-2:LIQUIDATED",
        "accounts:TRANSFER:98765:LIQUIDATED",
    }
    flagged = json.loads(items["accounts:RECEIVE:rcv-1:LIQUIDATED"].warnings or "[]")
    assert flagged == [
        {"pointer": "/type", "expected": "the type the path names, TRANSFER (read as the body's)"}
    ]
    with session_scope(running_node.node.engine) as session:
        routes = set(session.execute(select(WebhookDelivery.route)).scalars())  # type: ignore[call-overload]
    assert "/webhooks/accounts/transfer/receive" in routes
    running_node.wait_processed()
    assert {i.status for i in _items(running_node).values()} == {"processed"}
    metrics = running_node.http.get("/metrics").text
    label = 'route="/webhooks/accounts/{kind}/{more:path}",status="200"'
    assert f"pixrecon_webhook_deliveries_total{{{label}}} 3.0" in metrics


def test_known_type_with_invalid_data_is_400_with_violations(running_node: RunningNode) -> None:
    response = running_node.http.post(
        "/webhooks/accounts", json={"type": "TRANSFER", "data": {"status": "LIQUIDATED"}}
    )
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/problem+json"
    # The key first, then the item's other problems: a movement without its amount.
    assert [v["property"] for v in response.json()["violations"]] == [
        "/data",
        "/data/payment/amount",
    ]
    assert _items(running_node) == {}


def test_domain_rows_from_every_kind(running_node: RunningNode) -> None:
    for fixture, path, _ in CASES:
        assert running_node.http.post(path, json=load(fixture)).status_code == 200
    running_node.wait_processed()

    pix = {p.end_to_end_id: p for p in _rows(running_node, PixReceived)}
    assert len(pix) == 7
    assert pix["E18236120202611221500a0000000003"].amount_cents == 7
    assert pix["E18236120202611221500f0000000002"].amount_cents == 150000
    invalid = pix["E18236120202611221500a0000000004"]
    assert invalid.horario is None
    assert invalid.horario_raw == "2026-02-30T25:61:00Z"

    refunds = {r.refund_id: r for r in _rows(running_node, PixRefund)}
    assert {k: (r.status, r.amount_cents) for k, r in refunds.items()} == {
        "123ABC": ("EM_PROCESSAMENTO", 1000),
        "dev1": ("DEVOLVIDO", 3000),
        "dev2": ("EM_PROCESSAMENTO", 2000),
    }

    movements = {(m.type, m.reference): m for m in _rows(running_node, AccountMovement)}
    transfer = movements[("TRANSFER", "98765")]
    assert (transfer.amount_cents, transfer.idempotency_key) == (25050, "payout-2026-11-22-0001")
    assert movements[("REFUND", "rcv-000123")].refunded_cents == 1200
    cashout = movements[("CASHOUT", "payout-2026-11-22-0002")]
    # The SPI code beside ``data`` says why: what finance tells the payee.
    assert (cashout.status, cashout.amount_cents, cashout.error_code) == ("REJECTED", None, "AC03")

    infraction = _rows(running_node, Infraction)[0]
    assert (infraction.infraction_id, infraction.amount_cents) == ("inf-5566", 30000)
    recurrence = _rows(running_node, Recurrence)[0]
    assert recurrence.status == "APROVADA"
    charge = _rows(running_node, RecurringCharge)[0]
    assert (charge.attempts, charge.last_attempt_status) == (1, "SOLICITADA")


def test_an_older_status_arriving_late_does_not_win(running_node: RunningNode) -> None:
    transfer = load("accounts/transfer.json")
    processing = json.loads(json.dumps(transfer))
    processing["data"]["status"] = "PROCESSING"
    refund_done = load("qrcode/pix_refunds_array.json")
    refund_late = json.loads(json.dumps(refund_done))
    refund_late["pix"][0]["devolucoes"] = [
        dict(refund_done["pix"][0]["devolucoes"][0], status="EM_PROCESSAMENTO")
    ]
    for path, body in [
        ("/webhooks/accounts", transfer),
        ("/webhooks/qrcode/pix", refund_done),
    ]:
        running_node.http.post(path, json=body)
    running_node.wait_processed()
    for path, body in [("/webhooks/accounts", processing), ("/webhooks/qrcode/pix", refund_late)]:
        assert running_node.http.post(path, json=body).json()["new"] == 1
    running_node.wait_processed()
    (movement,) = _rows(running_node, AccountMovement)
    assert movement.status == "LIQUIDATED"
    refunds = {r.refund_id: r.status for r in _rows(running_node, PixRefund)}
    assert refunds["dev1"] == "DEVOLVIDO"


def test_entries_of_a_refunds_list_that_are_no_object_are_no_returns(
    running_node: RunningNode,
) -> None:
    transfer = load("accounts/transfer.json")
    data = transfer["data"]
    data["status"] = "PARTIALLY_REFUNDED"
    data["refunds"] = [
        {
            "endToEndId": "D1234567820261127100012345678901",
            "status": "LIQUIDATED",
            "pixRefundAmount": "1.00",
        },
        None,
        5,
    ]
    answer = running_node.http.post("/webhooks/accounts", json=transfer)
    assert answer.status_code == 200
    running_node.wait_processed()
    (item,) = _rows(running_node, InboxItem)
    assert item.key.endswith(":PARTIALLY_REFUNDED:r1")
    assert {w["pointer"] for w in json.loads(item.warnings or "[]")} >= {
        "/data/refunds/1",
        "/data/refunds/2",
    }
    (movement,) = _rows(running_node, AccountMovement)
    assert movement.refunded_cents == 100
    returns = _rows(running_node, PayoutReturn)
    assert [(r.ref, r.amount_cents) for r in returns] == [("D1234567820261127100012345678901", 100)]


def _partial_refund(n: int, refund: dict[str, Any], shape: str) -> dict[str, Any]:
    return {
        "type": "TRANSFER",
        "data": {
            "id": f"p{n}",
            "idempotencyKey": f"ik{n}",
            "status": "PARTIALLY_REFUNDED",
            "endToEndId": f"E12345678202611271200abcdefghij{n}",
            "createdAt": "2026-11-27T12:00:00Z",
            "payment": {"amount": "10.00"},
            "refunds": refund if shape == "object" else [refund],
        },
    }


@pytest.mark.parametrize("with_e2e", [True, False], ids=["refund-e2e", "no-refund-e2e"])
def test_a_single_refund_object_counts_as_an_array_of_one_does(
    running_node: RunningNode, with_e2e: bool
) -> None:
    def refund(n: int) -> dict[str, Any]:
        found = {"status": "LIQUIDATED", "pixRefundAmount": "2.00"}
        return {"endToEndId": f"D12345678202611271300abcdefghij{n}", **found} if with_e2e else found

    for n, shape in [(1, "object"), (2, "array")]:
        answer = running_node.http.post(
            "/webhooks/accounts", json=_partial_refund(n, refund(n), shape)
        )
        assert answer.status_code == 200, answer.text
    summary = running_node.wait_processed()
    assert summary["failed"] == 0, summary
    items = {i.key.split(":")[2]: i for i in _items(running_node).values()}
    assert {n: i.key.split(":", 2)[2] for n, i in items.items()} == {
        "p1": "p1:PARTIALLY_REFUNDED:r1",
        "p2": "p2:PARTIALLY_REFUNDED:r1",
    }
    assert json.loads(items["p1"].warnings or "[]") == [
        {"pointer": "/data/refunds", "expected": ONE_AS_ARRAY}
    ]
    assert items["p2"].warnings in (None, "[]")
    movements = {m.reference: m for m in _rows(running_node, AccountMovement)}
    assert [(movements[r].refunded_cents, movements[r].rank) for r in ("p1", "p2")] == [
        (200, movements["p2"].rank)
    ] * 2
    returns = {r.payout_key: r for r in _rows(running_node, PayoutReturn)}
    assert set(returns) == {"ik1", "ik2"}

    def kept(key: str, n: int) -> tuple[Any, ...]:
        row = returns[key]
        ref = f"D12345678202611271300abcdefghij{n}" if with_e2e else f"{key}#1"
        assert row.ref == ref
        assert row.inbox_item_id == items[f"p{n}"].id
        # Without a time of its own, a return is dated when its notification arrived.
        assert row.returned_at == items[f"p{n}"].received_at
        return (row.status, row.amount_cents, row.rank)

    assert kept("ik1", 1) == kept("ik2", 2)
    assert kept("ik1", 1)[:2] == ("LIQUIDATED", 200)


def test_a_cash_out_code_inside_data_is_kept_too(running_node: RunningNode) -> None:
    body = load("accounts/cashout_minimal.json")
    code = body.pop("errorCode", None) or "AM04"
    body["data"]["errorCode"] = code
    assert running_node.http.post("/webhooks/accounts", json=body).status_code == 200
    running_node.wait_processed()
    (movement,) = _rows(running_node, AccountMovement)
    assert movement.error_code == code


@pytest.mark.parametrize(
    ("refund", "flagged"),
    [
        ({"endToEndId": "D" * 65, "status": "LIQUIDATED"}, "/data/refunds/0/endToEndId"),
        (
            {"endToEndId": "D18236120202611221700r0000000001", "status": "S" * 40},
            "/data/refunds/0/status",
        ),
    ],
    ids=["long-end-to-end-id", "long-status"],
)
def test_a_payout_return_no_column_can_hold_is_flagged_and_the_payout_kept(
    running_node: RunningNode, refund: dict[str, Any], flagged: str
) -> None:
    document = load("accounts/transfer.json")
    document["data"]["status"] = "PARTIALLY_REFUNDED"
    document["data"]["refunds"] = [{**refund, "pixRefundAmount": "1.00"}]
    response = running_node.http.post("/webhooks/accounts", json=document)
    assert response.status_code == 200, response.text
    summary = running_node.wait_processed()
    assert summary["failed"] == 0, summary
    (item,) = _items(running_node).values()
    assert flagged in {w["pointer"] for w in json.loads(item.warnings or "[]")}
    with session_scope(running_node.node.engine) as session:
        movement = session.execute(select(AccountMovement)).scalar_one()
    assert movement.status == "PARTIALLY_REFUNDED"
