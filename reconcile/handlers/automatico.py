"""Pix Automático: recurrences and recurring charges, newest update wins."""

from __future__ import annotations

from sqlmodel import Session

from reconcile.handlers.common import parse_payload, upsert_latest, validate
from reconcile.models import InboxItem, Recurrence, RecurringCharge
from reconcile.payloads.automatico import CobRNotification, RecNotification
from reconcile.timeutil import parse_timestamp


def _millis(raw: str) -> int:
    when = parse_timestamp(raw)
    return int(when.timestamp() * 1000) if when is not None else 0


def handle_rec(session: Session, item: InboxItem) -> None:
    rec = validate(RecNotification, parse_payload(item), "recurrence")
    updated = rec.updated()
    upsert_latest(
        session,
        Recurrence,
        ["id_rec"],
        {
            "id_rec": rec.idRec,
            "status": rec.status,
            "status_at": parse_timestamp(updated),
            "rank": _millis(updated),
            "inbox_item_id": item.id,
        },
    )


def handle_cobr(session: Session, item: InboxItem) -> None:
    cobr = validate(CobRNotification, parse_payload(item), "recurring charge")
    updated = cobr.updated()
    last = cobr.tentativas[-1] if cobr.tentativas else None
    upsert_latest(
        session,
        RecurringCharge,
        ["txid"],
        {
            "txid": cobr.txid,
            "id_rec": cobr.idRec,
            "status": cobr.status,
            "attempts": len(cobr.tentativas),
            "last_attempt_status": last.status if last else None,
            "last_attempt_end_to_end_id": last.endToEndId if last else None,
            "status_at": parse_timestamp(updated),
            # Newer status time first; among equal times, more attempts is later.
            "rank": _millis(updated) * 100 + min(len(cobr.tentativas), 99),
            "inbox_item_id": item.id,
        },
    )
