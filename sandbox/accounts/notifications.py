"""Accounts API notifications ``{"type": T, "data": {...}}`` built from the sandbox state.

Shapes follow docs/design.md §4: TRANSFER/REFUND carry a payout's full ``data``; RECEIVE a Pix
received on the QR code side in the same shape; CASHOUT is a pre-settlement failure with
only a few fields and sibling keys beside ``data``; INFRACTION has no ``endToEndId`` (the
receiver must fetch the case for it).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final

from sandbox.accounts.state import AccountsState

NOTIFICATION_TYPES: Final = frozenset({"TRANSFER", "RECEIVE", "REFUND", "CASHOUT", "INFRACTION"})


def notification_key(notification: Mapping[str, Any]) -> str:
    """``TYPE:reference:status``, the key fault plans use (the receiver's dedupe key)."""
    data = notification.get("data") or {}
    ref = data.get("id") or data.get("idempotencyKey") or data.get("endToEndId")
    return f"{notification.get('type')}:{ref}:{data.get('status')}"


def _payment(accounts: AccountsState, key: str) -> dict[str, Any]:
    payment = accounts.payments.get_by_key(key)
    if payment is None:
        raise KeyError(f"no payment with idempotencyKey {key!r}")
    return payment


def transfer_notification(accounts: AccountsState, key: str) -> dict[str, Any]:
    return {"type": "TRANSFER", "data": _payment(accounts, key)}


def refund_notification(accounts: AccountsState, key: str) -> dict[str, Any]:
    data = _payment(accounts, key)
    data["webhookType"] = "REFUND"
    return {"type": "REFUND", "data": data}


def cashout_notification(accounts: AccountsState, key: str) -> dict[str, Any]:
    """A payout that failed before settlement, in the provider's terse shape."""
    payment = _payment(accounts, key)
    data = {k: payment[k] for k in ("status", "createdAt", "endToEndId", "idempotencyKey")}
    data["message"] = f"Payment {payment['status'].lower()}"
    return {"type": "CASHOUT", "data": data, "errorCode": payment["errorCode"], "retry": False}


def receive_notification(accounts: AccountsState, end_to_end_id: str) -> dict[str, Any]:
    pix = accounts.pix(end_to_end_id)
    refunds = [r for r in pix.get("devolucoes") or [] if r.get("status") == "DEVOLVIDO"]
    refunded = sum((Decimal(r["valor"]) for r in refunds), Decimal(0))
    amount = Decimal(pix["valor"])
    status = "LIQUIDATED"
    if refunded:
        status = "REFUNDED" if refunded >= amount else "PARTIALLY_REFUNDED"
    payer = pix.get("pagador") or {}
    return {
        "type": "RECEIVE",
        "data": {
            "id": f"rcv-{end_to_end_id}",
            "idempotencyKey": None,
            "endToEndId": end_to_end_id,
            "pixKey": pix.get("chave"),
            "txId": pix.get("txid"),
            "status": status,
            "errorCode": None,
            "creditDebitType": "CREDIT",
            "localInstrument": "QRDN" if pix.get("txid") else "DICT",
            "createdAt": pix["horario"],
            "debtorAccount": {
                "document": payer.get("cpf") or payer.get("cnpj"),
                "name": payer.get("nome"),
            },
            "creditorAccount": accounts.payments.debtor_account(),
            "payment": {"currency": "BRL", "amount": amount},
            "refunds": [
                {
                    "endToEndId": r["rtrId"],
                    "status": "LIQUIDATED",
                    "errorCode": None,
                    "pixRefundAmount": Decimal(r["valor"]),
                }
                for r in refunds
            ],
            "webhookType": "RECEIVE",
        },
    }


def infraction_notification(accounts: AccountsState, infraction_id: str) -> dict[str, Any]:
    case = accounts.infractions.get(infraction_id)
    if case is None:
        raise KeyError(f"no infraction {infraction_id!r}")
    keep = (
        "id",
        "status",
        "amount",
        "debitedAmount",
        "blockedAmount",
        "reason",
        "analysisResult",
        "createdAt",
        "analysisDeadline",
    )
    return {"type": "INFRACTION", "data": {k: case[k] for k in keep}}
