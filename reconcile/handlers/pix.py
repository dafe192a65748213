"""Pix received and their refunds, from the BCB callback or from polling."""

from __future__ import annotations

from typing import Any

from sqlmodel import Session

from reconcile.handlers.common import (
    PermanentItemError,
    insert_ignore,
    parse_payload,
    require_key,
    upsert_latest,
    validate,
)
from reconcile.logs import get_logger
from reconcile.models import Confirmation, InboxItem, PixReceived, PixRefund, Source
from reconcile.money import to_cents
from reconcile.payloads import UNKNOWN_STATUS
from reconcile.payloads.pix import Devolucao, PixItem
from reconcile.payloads.tolerant import read_timestamp
from reconcile.timeutil import utcnow

log = get_logger(__name__)

REFUND_RANK = {"EM_PROCESSAMENTO": 1, "DEVOLVIDO": 2, "NAO_REALIZADO": 2}


def pix_row(item: InboxItem) -> dict[str, Any]:
    """The ``pix_received`` row an item makes (``PermanentItemError`` when it cannot)."""
    pix = validate(PixItem, parse_payload(item), "Pix payload")
    require_key(pix, "Pix payload")
    assert pix.endToEndId is not None
    payer = pix.pagador
    document = (payer.cpf or payer.cnpj) if payer else None
    horario = read_timestamp(pix.horario)
    now = utcnow()
    amount = to_cents(pix.valor) if pix.valor is not None else None
    # Listed by the provider's API with its amount: that is the confirmation. Notified
    # only, or an amount nobody could read: to be looked up before the money counts.
    confirmed = item.source == Source.POLL.value and amount is not None
    log.debug(
        "pix_received",
        item_id=item.id,
        end_to_end_id=pix.endToEndId,
        txid=pix.txid,
        amount_cents=amount,
        horario_valid=horario is not None,
        payer_document=document,
    )
    return {
        "end_to_end_id": pix.endToEndId,
        "txid": pix.txid,
        "amount_cents": amount,
        "horario": horario,
        "horario_raw": pix.horario,
        "chave": pix.chave,
        "info_pagador": pix.infoPagador,
        "payer_document": document,
        "payer_name": payer.nome if payer else None,
        "components": pix.components_json(),
        "inbox_item_id": item.id,
        "created_at": now,
        "confirmation": (Confirmation.CONFIRMED.value if confirmed else Confirmation.PENDING.value),
        "confirmed_amount_cents": amount if confirmed else None,
        "confirmed_at": now if confirmed else None,
        "next_check_at": None if confirmed else now,
    }


def handle_pix(session: Session, item: InboxItem) -> None:
    insert_ignore(session, PixReceived, pix_row(item))


def refund_row(item: InboxItem) -> dict[str, Any]:
    """The ``pix_refund`` row an item makes (``PermanentItemError`` when it cannot)."""
    payload = parse_payload(item)
    end_to_end_id = payload.get("endToEndId") if isinstance(payload, dict) else None
    if not isinstance(end_to_end_id, str):
        raise PermanentItemError("refund without the endToEndId of its Pix")
    refund = validate(Devolucao, payload.get("devolucao"), "refund payload")
    require_key(refund, "refund payload")
    # The SPI's id stands in for the merchant's when a sender leaves the latter out.
    refund_id = refund.id or refund.rtrId
    assert refund_id is not None
    if len(end_to_end_id) > 32:
        raise PermanentItemError("refund of a Pix whose endToEndId is not one")
    times = refund.horario
    status = refund.status or UNKNOWN_STATUS
    amount = to_cents(refund.valor) if refund.valor is not None else None
    return {
        "end_to_end_id": end_to_end_id,
        "refund_id": refund_id,
        "rtr_id": refund.rtrId,
        "amount_cents": amount,
        "natureza": refund.natureza,
        "status": status,
        "motivo": refund.motivo,
        "requested_at": read_timestamp(times.solicitacao) if times else None,
        "settled_at": read_timestamp(times.liquidacao) if times else None,
        "rank": REFUND_RANK.get(status, 0),
        "inbox_item_id": item.id,
        **refund_confirmation(item, amount),
    }


REFUND_KEY = ["end_to_end_id", "refund_id"]


def handle_pix_refund(session: Session, item: InboxItem) -> None:
    upsert_latest(session, PixRefund, REFUND_KEY, refund_row(item))


def refund_confirmation(item: InboxItem, amount_cents: int | None) -> dict[str, object]:
    """Listed by the API (polling ``GET /pix``) with its amount: confirmed as it stands.
    Notified only, or its amount unreadable: it counts once ``GET /pix/{e2eid}`` shows it."""
    now = utcnow()
    polled = item.source == Source.POLL.value and amount_cents is not None
    return {
        "confirmation": Confirmation.CONFIRMED.value if polled else Confirmation.PENDING.value,
        "confirmed_amount_cents": amount_cents if polled else None,
        "confirmed_at": now if polled else None,
        "next_check_at": None if polled else now,
    }
