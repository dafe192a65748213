"""Charges polled from the API become expected payments; the newest status wins."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Any

from sqlalchemy import ColumnElement, case, literal, literal_column, or_
from sqlmodel import Session

from reconcile.db import table_of
from reconcile.handlers.common import PermanentItemError, parse_payload, upsert_latest, validate
from reconcile.inbox import dump_json
from reconcile.models import (
    ENDED_CHARGE_STATES,
    REMOVED_CHARGE_PREFIX,
    ExpectedPayment,
    InboxItem,
    UtcDateTime,
)
from reconcile.money import to_cents
from reconcile.payloads.charges import CHARGE_KINDS, Charge, Invoice
from reconcile.payloads.tolerant import read_timestamp

# Final states outrank open ones; later revisions outrank earlier ones.
STATUS_RANK = {"CRIADA": 1, "ATIVA": 2, "PENDING": 2}


def _handle_invoice(session: Session, item: InboxItem, raw: object) -> None:
    invoice = validate(Invoice, raw, "invoice")
    upsert_latest(
        session,
        ExpectedPayment,
        ["kind", "ref"],
        {
            "kind": "invoice",
            "ref": invoice.id,
            "txid": None,
            "amount_cents": to_cents(invoice.amount),
            "status": invoice.status,
            "created_at_provider": read_timestamp(invoice.createdAt),
            "expires_at": None,
            "due_date": _date(invoice.dueDate),
            "payable_until": None,
            "rank": STATUS_RANK.get(invoice.status, 5),
            "inbox_item_id": item.id,
        },
    )


def _date(raw: str | None) -> date | None:
    try:
        return date.fromisoformat(raw) if raw else None
    except ValueError:
        return None


def _terms_json(kind: str, charge: Charge, raw: object) -> str | None:
    """A due-date charge's fine, interest, abatement and discount, as received (JSON): what
    it costs on the day it is paid is worked out when that day is reconciled. A recurring
    charge's terms are how it is collected: its retry policy and its attempts so far."""
    if kind == "cobr":
        return dump_json(collection_terms(raw))
    terms = charge.valor.terms() if kind == "cobv" else None
    return dump_json(terms) if terms is not None else None


def collection_terms(raw: object) -> dict[str, Any]:
    """Of a ``cobr``: its recurrence (``idRec``), ``politicaRetentativa``, each attempt's
    status, date and rejection code, and the closing rejection (``encerramento.rejeicao``),
    tolerantly."""
    data = raw if isinstance(raw, dict) else {}
    attempts = [t for t in data.get("tentativas") or [] if isinstance(t, dict)]

    def code(holder: object) -> object:
        rejection = holder.get("rejeicao") if isinstance(holder, dict) else None
        return rejection.get("codigo") if isinstance(rejection, dict) else None

    return {
        "idRec": data.get("idRec"),
        "politicaRetentativa": data.get("politicaRetentativa"),
        "tentativas": [
            {"status": t.get("status"), "data": t.get("dataLiquidacao"), "codigo": code(t)}
            for t in attempts
        ],
        "rejeicao": code(data.get("encerramento")),
    }


def ended(status: ColumnElement[str]) -> ColumnElement[bool]:
    """A charge in ``status`` can no longer be paid: removed, expired, rejected, cancelled."""
    return or_(status.like(f"{REMOVED_CHARGE_PREFIX}%"), status.in_(ENDED_CHARGE_STATES))


def _ended_seen(item: InboxItem, status: str) -> Callable[[Any], dict[str, Any]]:
    """For an ended status replacing an open one: when each was received
    (``ended_seen_at``, ``open_seen_at``). The BCB's charge says no time for its removal,
    and a charge seen open before its day ended and ended only after was open at that end,
    whenever its day is asked about again (``matching/charges.py``). One first stored
    ended keeps neither: nothing says it was ever open. Written only where the update is
    (a later fact, ``rank``)."""
    stored = table_of(ExpectedPayment)
    ending = status.startswith(REMOVED_CHARGE_PREFIX) or status in ENDED_CHARGE_STATES
    if not ending:
        return lambda _excluded: {"ended_seen_at": None, "open_seen_at": None}
    # The stored row's item, before this update points it at the ended one's. Written out:
    # SQLAlchemy does not correlate a subquery with the row an upsert updates.
    open_item = literal_column(
        "(SELECT inbox_item.received_at FROM inbox_item"
        " WHERE inbox_item.id = expected_payment.inbox_item_id)",
        UtcDateTime,
    )
    was_ended = ended(stored.c.status)
    return lambda _excluded: {
        "ended_seen_at": case(
            (was_ended, stored.c.ended_seen_at), else_=literal(item.received_at, UtcDateTime)
        ),
        "open_seen_at": case((was_ended, stored.c.open_seen_at), else_=open_item),
    }


def handle_charge(session: Session, item: InboxItem) -> None:
    payload = parse_payload(item)
    kind = payload.get("kind") if isinstance(payload, dict) else None
    if kind == "invoice":
        _handle_invoice(session, item, payload.get("data"))
        return
    if kind not in CHARGE_KINDS:
        raise PermanentItemError(f"unknown charge kind: {kind!r}")
    charge = validate(Charge, payload.get("data"), f"{kind} charge")
    debtor = charge.devedor
    upsert_latest(
        session,
        ExpectedPayment,
        ["kind", "ref"],
        {
            "kind": kind,
            "ref": charge.txid,
            "txid": charge.txid,
            "amount_cents": to_cents(charge.valor.original),
            "status": charge.status,
            "created_at_provider": charge.created_at(),
            "expires_at": charge.expires_at(),
            "due_date": charge.due_date(),
            "payable_until": charge.payable_until(),
            "terms": _terms_json(kind, charge, payload.get("data")),
            "payer_request": charge.solicitacaoPagador,
            "debtor_document": (debtor.cpf or debtor.cnpj) if debtor else None,
            "debtor_name": debtor.nome if debtor else None,
            "rank": charge.revisao * 10 + STATUS_RANK.get(charge.status, 5),
            "inbox_item_id": item.id,
            "ended_seen_at": None,
            "open_seen_at": None,
        },
        _ended_seen(item, charge.status),
    )
