"""Pix received and their refunds, from the BCB callback or from polling."""

from __future__ import annotations

from sqlmodel import Session

from reconcile.handlers.common import (
    PermanentItemError,
    insert_ignore,
    parse_payload,
    upsert_latest,
    validate,
)
from reconcile.logs import get_logger
from reconcile.models import Confirmation, InboxItem, PixReceived, PixRefund, Source
from reconcile.money import to_cents
from reconcile.payloads.pix import Devolucao, PixItem
from reconcile.timeutil import parse_timestamp, utcnow

log = get_logger(__name__)

REFUND_RANK = {"EM_PROCESSAMENTO": 1, "DEVOLVIDO": 2, "NAO_REALIZADO": 2}


def handle_pix(session: Session, item: InboxItem) -> None:
    pix = validate(PixItem, parse_payload(item), "Pix payload")
    payer = pix.pagador
    document = (payer.cpf or payer.cnpj) if payer else None
    horario = parse_timestamp(pix.horario)
    now = utcnow()
    polled = item.source == Source.POLL.value
    insert_ignore(
        session,
        PixReceived,
        {
            "end_to_end_id": pix.endToEndId,
            "txid": pix.txid,
            "amount_cents": to_cents(pix.valor),
            "horario": horario,
            "horario_raw": pix.horario,
            "chave": pix.chave,
            "info_pagador": pix.infoPagador,
            "payer_document": document,
            "payer_name": payer.nome if payer else None,
            "components": pix.components_json(),
            "inbox_item_id": item.id,
            "created_at": now,
            # Listed by the provider's API: that is the confirmation. Notified only: to be
            # looked up before the money counts.
            "confirmation": (
                Confirmation.CONFIRMED.value if polled else Confirmation.PENDING.value
            ),
            "confirmed_amount_cents": to_cents(pix.valor) if polled else None,
            "confirmed_at": now if polled else None,
            "next_check_at": None if polled else now,
        },
    )
    log.info(
        "pix_received",
        item_id=item.id,
        end_to_end_id=pix.endToEndId,
        txid=pix.txid,
        amount_cents=to_cents(pix.valor),
        horario_valid=horario is not None,
        payer_document=document,
    )


def handle_pix_refund(session: Session, item: InboxItem) -> None:
    payload = parse_payload(item)
    end_to_end_id = payload.get("endToEndId") if isinstance(payload, dict) else None
    if not isinstance(end_to_end_id, str):
        raise PermanentItemError("refund without the endToEndId of its Pix")
    refund = validate(Devolucao, payload.get("devolucao"), "refund payload")
    times = refund.horario
    upsert_latest(
        session,
        PixRefund,
        ["end_to_end_id", "refund_id"],
        {
            "end_to_end_id": end_to_end_id,
            "refund_id": refund.id,
            "rtr_id": refund.rtrId,
            "amount_cents": to_cents(refund.valor),
            "natureza": refund.natureza,
            "status": refund.status,
            "motivo": refund.motivo,
            "requested_at": parse_timestamp(times.solicitacao) if times else None,
            "settled_at": parse_timestamp(times.liquidacao) if times else None,
            "rank": REFUND_RANK.get(refund.status, 0),
            "inbox_item_id": item.id,
            **refund_confirmation(item, to_cents(refund.valor)),
        },
    )


def refund_confirmation(item: InboxItem, amount_cents: int) -> dict[str, object]:
    """Listed by the API (polling ``GET /pix``): confirmed as it stands. Notified only: the
    refund's money counts once ``GET /pix/{e2eid}`` shows it."""
    now = utcnow()
    polled = item.source == Source.POLL.value
    return {
        "confirmation": Confirmation.CONFIRMED.value if polled else Confirmation.PENDING.value,
        "confirmed_amount_cents": amount_cents if polled else None,
        "confirmed_at": now if polled else None,
        "next_check_at": None if polled else now,
    }
