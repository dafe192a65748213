"""Pix Automático notifications the provider's API denied, each kept as it was when denied
(``denied_claim``). The ``recurrence`` and ``recurring_charge`` rows hold only the latest
state: a genuine notification of the same object the next day takes the row over, and
the day the denied one is about would, asked again, no longer know it was denied
(docs/design.md §5). Written with the look-up's outcome, in its transaction."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import select
from sqlmodel import Session

from reconcile.db import dialect_of, insert_for, table_of
from reconcile.models import (
    Confirmation,
    DeniedClaim,
    ExpectedPayment,
    InboxItem,
    ItemKind,
    Recurrence,
    RecurringCharge,
)
from reconcile.timeutil import BUSINESS_TZ, as_utc

DENIED = (
    Confirmation.STATUS_MISMATCH.value,
    Confirmation.UNCONFIRMED_WEBHOOK.value,
    Confirmation.UNVERIFIABLE.value,
)


def kind_of(model: type[Recurrence] | type[RecurringCharge]) -> str:
    return ItemKind.REC.value if model is Recurrence else ItemKind.COBR.value


def claimed_at(status_at: datetime | None, received_at: datetime) -> datetime:
    """The day a notification is about: the time it gives its state, never later than it
    arrived (a notification cannot announce what has not happened yet)."""
    received = as_utc(received_at)
    if status_at is None or as_utc(status_at) > received:
        return received
    return as_utc(status_at)


def record_denied(
    session: Session,
    model: type[Recurrence] | type[RecurringCharge],
    row_id: int,
    api_cents: int | None,
    denied_at: datetime,
) -> None:
    """Keep the row's notification, just denied, with its day. ``api_cents``: the amount
    the API states for the object, when it knows it; else the one known here."""
    table, inbox = table_of(model), table_of(InboxItem)
    row = session.execute(
        select(table, inbox.c.received_at)
        .join(inbox, inbox.c.id == table.c.inbox_item_id)
        .where(table.c.id == row_id)
    ).one_or_none()
    if row is None or row.confirmation not in DENIED:
        return
    values: dict[str, Any] = {
        "kind": kind_of(model),
        "status": row.status,
        "confirmation": row.confirmation,
        "confirmed_status": row.confirmed_status,
        "claimed_at": claimed_at(row.status_at, row.received_at),
        "denied_at": denied_at,
        "inbox_item_id": row.inbox_item_id,
    }
    if model is Recurrence:
        values |= {"key": row.id_rec, "amount_cents": row.amount_cents}
    else:
        charges = table_of(ExpectedPayment)
        known = session.execute(
            select(charges.c.amount_cents).where(
                charges.c.kind == ItemKind.COBR.value, charges.c.ref == row.txid
            )
        ).scalar_one_or_none()
        values |= {
            "key": row.txid,
            "amount_cents": api_cents if api_cents is not None else known,
            "attempt_status": row.last_attempt_status,
            "attempt_end_to_end_id": row.last_attempt_end_to_end_id,
        }
    stmt = insert_for(dialect_of(session))(table_of(DeniedClaim)).values(values)
    session.execute(stmt.on_conflict_do_nothing())


def first_denied_attempts(
    session: Session, wanted: set[tuple[str, date]]
) -> dict[tuple[str, date], str | None]:
    """For each (txid, business day): the last attempt's endToEndId the day's first
    denied notification of the charge named — the one the day's verdict is about."""
    claims = table_of(DeniedClaim)
    found: dict[tuple[str, date], str | None] = {}
    keys = sorted({key for key, _ in wanted})
    if not keys:
        return found
    rows = session.execute(
        select(claims.c.key, claims.c.claimed_at, claims.c.attempt_end_to_end_id)
        .where(claims.c.kind == ItemKind.COBR.value, claims.c.key.in_(keys))
        .order_by(claims.c.id)
    )
    for key, at, e2e in rows:
        day = as_utc(at).astimezone(BUSINESS_TZ).date()
        if (key, day) in wanted:
            found.setdefault((key, day), e2e)
    return found
