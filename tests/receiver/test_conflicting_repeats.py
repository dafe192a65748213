"""A webhook repeat of a key already in the inbox is a duplicate; one that states another
amount (another valor under the same endToEndId, a second Pix under one key in one body,
a refund's amount changed) is flagged on the item, once, and the first content stays the
item's. A Pix sent again with its refunds, or an amount in another notation, is the same
money: no conflict."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select
from sqlmodel import col

from reconcile.db import session_scope
from reconcile.inbox import CONFLICTING_REPEAT
from reconcile.models import InboxItem, PixReceived
from tests.conftest import SECRET, RunningNode
from tests.factories import e2e_id

HEADERS = {"X-Webhook-Secret": SECRET, "Content-Type": "application/json"}


def _post(node: RunningNode, *pixes: dict[str, Any]) -> Any:
    answer = node.http.post("/webhooks/qrcode/pix", json={"pix": list(pixes)}, headers=HEADERS)
    assert answer.status_code == 200, answer.text
    return answer.json()


def _item(node: RunningNode, e2e: str) -> InboxItem:
    with session_scope(node.node.engine) as session:
        found = session.execute(select(InboxItem).where(col(InboxItem.key) == f"pix:{e2e}"))
        item: InboxItem = found.scalar_one()
        return item


def _flags(item: InboxItem) -> list[dict[str, str]]:
    conflict = CONFLICTING_REPEAT.as_json()
    return [w for w in json.loads(item.warnings or "[]") if w == conflict]


def _pix(e2e: str, valor: str, **extra: Any) -> dict[str, Any]:
    return {"endToEndId": e2e, "valor": valor, "horario": "2026-11-27T12:00:00.000Z", **extra}


def test_a_repeat_with_another_amount_flags_the_item_once(running_node: RunningNode) -> None:
    e2e = e2e_id()
    assert _post(running_node, _pix(e2e, "10.00"))["new"] == 1
    again = _post(running_node, _pix(e2e, "20.00"))
    assert (again["new"], again["duplicates"]) == (0, 1)
    _post(running_node, _pix(e2e, "30.00"))
    running_node.wait_processed()
    item = _item(running_node, e2e)
    assert len(_flags(item)) == 1
    assert item.webhook_count == 3
    with session_scope(running_node.node.engine) as session:
        row = session.execute(select(PixReceived)).scalar_one()
    assert row.amount_cents == 1_000


def test_identical_repeats_and_a_pix_sent_again_with_its_refund_are_no_conflict(
    running_node: RunningNode,
) -> None:
    e2e = e2e_id()
    plain = _pix(e2e, "10.00", txid="pedido1234")
    _post(running_node, plain)
    _post(running_node, plain)
    _post(running_node, {**plain, "valor": "10.0"})
    refund = {
        "id": "dev1",
        "rtrId": "D" + e2e[1:],
        "valor": "10.00",
        "horario": {"solicitacao": "2026-11-27T13:00:00.000Z"},
        "status": "EM_PROCESSAMENTO",
    }
    with_refund = _post(running_node, {**plain, "devolucoes": [refund]})
    assert with_refund["new"] == 1  # the refund
    running_node.wait_processed()
    item = _item(running_node, e2e)
    assert item.webhook_count == 4
    assert _flags(item) == []


def test_two_pix_under_one_key_in_one_body_flag_the_first(running_node: RunningNode) -> None:
    e2e = e2e_id()
    answer = _post(running_node, _pix(e2e, "5.00"), _pix(e2e, "7.00"))
    assert (answer["new"], answer["duplicates"]) == (1, 1)
    running_node.wait_processed()
    item = _item(running_node, e2e)
    assert len(_flags(item)) == 1
    assert json.loads(item.payload)["valor"] == "5.00"


def test_a_pix_first_sent_without_its_amount_is_flagged_when_it_comes(
    running_node: RunningNode,
) -> None:
    """A callback holding only a Pix's refunds, then the whole Pix: the item made from the
    first has no amount, and the repeat that states one says so."""
    e2e = e2e_id()
    refund = {"id": "dev9", "valor": "1.00", "status": "EM_PROCESSAMENTO"}
    _post(running_node, {"endToEndId": e2e, "devolucoes": [refund]})
    _post(running_node, _pix(e2e, "50.00"))
    running_node.wait_processed()
    assert len(_flags(_item(running_node, e2e))) == 1
