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
from reconcile.models import InboxItem, PixReceived, RecurringCharge
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
    # When the first such repeat came, and what it stated: the nightly run of that day
    # makes it an exception (reconcile/matching/repeats.py).
    assert item.conflicted_at is not None
    assert item.conflict_amount_cents == 2_000
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
    assert (item.conflicted_at, item.conflict_amount_cents) == (None, None)


def test_two_pix_under_one_key_in_one_body_flag_the_first(running_node: RunningNode) -> None:
    e2e = e2e_id()
    answer = _post(running_node, _pix(e2e, "5.00"), _pix(e2e, "7.00"))
    assert (answer["new"], answer["duplicates"]) == (1, 1)
    running_node.wait_processed()
    item = _item(running_node, e2e)
    assert len(_flags(item)) == 1
    assert json.loads(item.payload)["valor"] == "5.00"
    assert (item.conflicted_at is not None, item.conflict_amount_cents) == (True, 700)


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


def _accounts(node: RunningNode, data: dict[str, Any], kind: str = "TRANSFER") -> Any:
    body = {"type": kind, "data": data}
    answer = node.http.post("/webhooks/accounts", json=body, headers=HEADERS)
    assert answer.status_code == 200, answer.text
    return answer.json()


def _accounts_item(node: RunningNode, key: str) -> InboxItem:
    with session_scope(node.node.engine) as session:
        found = session.execute(select(InboxItem).where(col(InboxItem.key) == key))
        item: InboxItem = found.scalar_one()
        return item


def test_an_accounts_repeat_that_states_other_money_or_another_outcome_is_flagged(
    running_node: RunningNode,
) -> None:
    """A provider's id is one movement: a delivery under the same id and status for another
    payout, another amount or, for a MED case, another outcome is no repeat of it."""
    payout = {
        "id": 4711,
        "idempotencyKey": "po-supplier-101",
        "endToEndId": e2e_id(),
        "status": "LIQUIDATED",
        "createdAt": "2026-11-27T10:00:00.000-03:00",
        "payment": {"currency": "BRL", "amount": 300.00},
    }
    _accounts(running_node, payout)
    # The same notification again, its amount written otherwise and a time added: a repeat.
    _accounts(
        running_node,
        {**payout, "payment": {"currency": "BRL", "amount": "300.0"}, "sentAt": "later"},
    )
    key = "accounts:TRANSFER:4711:LIQUIDATED"
    assert _flags(_accounts_item(running_node, key)) == []
    other = {**payout, "idempotencyKey": "po-supplier-001", "payment": {"amount": 800.00}}
    again = _accounts(running_node, other)
    assert (again["new"], again["duplicates"]) == (0, 1)
    flagged = _accounts_item(running_node, key)
    assert len(_flags(flagged)) == 1
    assert (flagged.conflicted_at is not None, flagged.conflict_amount_cents) == (True, 80_000)

    case = {
        "id": "inf-1",
        "status": "CLOSED",
        "analysisResult": "DISAGREED",
        "amount": 20.00,
        "endToEndId": e2e_id(),
    }
    _accounts(running_node, case, "INFRACTION")
    _accounts(
        running_node, {**case, "analysisResult": "AGREED", "debitedAmount": 20.00}, "INFRACTION"
    )
    running_node.wait_processed()
    assert len(_flags(_accounts_item(running_node, "accounts:INFRACTION:inf-1:CLOSED"))) == 1


def test_a_recurring_charge_sent_again_with_its_attempts_in_another_order_is_a_repeat(
    running_node: RunningNode,
) -> None:
    """``tentativas`` is a history the BCB gives no order to: the last attempt is the one
    that changed last, whatever its place, so the same charge is one item and keeps its
    paid attempt."""
    txid = "3136957d93134f2184b369e8f1c07C01"
    rejected = {
        "dataLiquidacao": "2026-12-05",
        "tipo": "AGND",
        "status": "REJEITADA",
        "endToEndId": e2e_id(),
        "atualizacao": [
            {"status": "SOLICITADA", "data": "2026-12-01T10:00:00Z"},
            {"status": "REJEITADA", "data": "2026-12-05T10:00:00Z"},
        ],
    }
    paid_e2e = e2e_id()
    paid = {
        "dataLiquidacao": "2026-12-06",
        "tipo": "RIFL",
        "status": "PAGA",
        "endToEndId": paid_e2e,
        "atualizacao": [
            {"status": "SOLICITADA", "data": "2026-12-05T11:00:00Z"},
            {"status": "PAGA", "data": "2026-12-06T10:00:00Z"},
        ],
    }

    def charge(attempts: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "idRec": "RR1234567820241128abcdefghijC",
            "txid": txid,
            "status": "CONCLUIDA",
            "valor": {"original": "35.00"},
            "atualizacao": [
                {"status": "ATIVA", "data": "2026-11-28T10:00:00Z"},
                {"status": "CONCLUIDA", "data": "2026-12-06T10:00:00Z"},
            ],
            "tentativas": attempts,
        }

    for attempts in ([rejected, paid], [paid, rejected]):
        answer = running_node.http.post(
            "/webhooks/qrcode/cobr", json={"cobsr": [charge(attempts)]}, headers=HEADERS
        )
        assert answer.status_code == 200, answer.text
    assert answer.json()["duplicates"] == 1
    running_node.wait_processed()
    with session_scope(running_node.node.engine) as session:
        keys = session.execute(
            select(col(InboxItem.key)).where(col(InboxItem.kind) == "cobr")
        ).all()
        stored = session.execute(select(RecurringCharge)).scalar_one()
    assert [key for (key,) in keys] == [f"cobr:{txid}:CONCLUIDA:2.PAGA"]
    assert (stored.last_attempt_status, stored.last_attempt_end_to_end_id) == ("PAGA", paid_e2e)
