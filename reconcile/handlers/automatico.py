"""Pix Automático: recurrences and recurring charges, newest update wins. What a poll brings
is the provider's API speaking; a notification is a claim, kept until the API's look-up
(``reconcile/confirmation.py``) stands behind it or not (docs/design.md §1.5)."""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import Any

from sqlmodel import Session

from reconcile.handlers.common import (
    confirmation_columns,
    parse_payload,
    require_key,
    upsert_latest,
    validate,
)
from reconcile.models import InboxItem, Recurrence, RecurringCharge
from reconcile.money import InvalidAmount, parse_amount, to_cents
from reconcile.payloads import UNKNOWN_STATUS
from reconcile.payloads.automatico import CobRNotification, RecNotification, read_date
from reconcile.payloads.tolerant import read_timestamp


def _millis(raw: str) -> int:
    when = read_timestamp(raw)
    return int(when.timestamp() * 1000) if when is not None else 0


def _confirmation(item: InboxItem, status: str, status_at: datetime | None) -> dict[str, Any]:
    """Polled: the API's status. Notified: the status the API stated before
    (``confirmed_status``, ``confirmed_status_at``) is left as it was, so that a
    notification nobody stands behind yet changes nothing the matchers count."""
    stated = {"confirmed_status": status, "confirmed_status_at": status_at}
    return confirmation_columns(item, stated, {})


def calendar_of(raw: dict[str, Any]) -> dict[str, Any]:
    """The recurrence's calendar and fixed amount, when the body carries them (the API's
    ``Rec`` does; a bare status notification may not). Absent fields are left out, so a
    later notification without them keeps what an earlier one told."""
    found: dict[str, Any] = {}
    calendario = raw.get("calendario")
    if isinstance(calendario, dict):
        for column, name in (("start_date", "dataInicial"), ("end_date", "dataFinal")):
            if (when := read_date(calendario.get(name))) is not None:
                found[column] = when
        periodicity = calendario.get("periodicidade")
        if isinstance(periodicity, str) and 0 < len(periodicity) <= 16:
            found["periodicity"] = periodicity.upper()
    valor = raw.get("valor")
    if isinstance(valor, dict) and valor.get("valorRec") is not None:
        with contextlib.suppress(InvalidAmount):
            found["amount_cents"] = to_cents(parse_amount(valor["valorRec"]))
    return found


def handle_rec(session: Session, item: InboxItem) -> None:
    raw = parse_payload(item)
    rec = validate(RecNotification, raw, "recurrence")
    require_key(rec, "recurrence")
    updated = rec.updated()
    status = rec.status or UNKNOWN_STATUS
    upsert_latest(
        session,
        Recurrence,
        ["id_rec"],
        {
            "id_rec": rec.idRec,
            "status": status,
            "status_at": read_timestamp(updated),
            "rank": _millis(updated),
            "inbox_item_id": item.id,
            **(calendar_of(raw) if isinstance(raw, dict) else {}),
            **_confirmation(item, status, read_timestamp(updated)),
        },
    )


def handle_cobr(session: Session, item: InboxItem) -> None:
    cobr = validate(CobRNotification, parse_payload(item), "recurring charge")
    require_key(cobr, "recurring charge")
    updated = cobr.updated()
    attempts = cobr.tentativas or []
    last = cobr.last_attempt()
    status = cobr.status or UNKNOWN_STATUS
    upsert_latest(
        session,
        RecurringCharge,
        ["txid"],
        {
            "txid": cobr.txid,
            "id_rec": cobr.idRec,
            "status": status,
            "attempts": len(attempts),
            "last_attempt_status": last.status if last else None,
            "last_attempt_end_to_end_id": last.endToEndId if last else None,
            "status_at": read_timestamp(updated),
            # Newer status time first; among equal times, more attempts is later.
            "rank": _millis(updated) * 100 + min(len(attempts), 99),
            "inbox_item_id": item.id,
            **_confirmation(item, status, read_timestamp(updated)),
        },
    )
