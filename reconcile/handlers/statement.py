"""Statement lines and balance readings: facts of the provider's books, stored as given."""

from __future__ import annotations

from sqlmodel import Session

from reconcile.handlers.common import PermanentItemError, insert_ignore, parse_payload, validate
from reconcile.models import BalanceSnapshot, InboxItem, StatementEntry
from reconcile.money import to_cents
from reconcile.payloads.statement import BalanceReading, StatementLine
from reconcile.payloads.tolerant import read_timestamp


def handle_statement(session: Session, item: InboxItem) -> None:
    line = validate(StatementLine, parse_payload(item), "statement line")
    insert_ignore(
        session,
        StatementEntry,
        {
            "entry_id": line.id,
            "type": line.type.upper(),
            "category": line.category,
            "amount_cents": to_cents(line.amount),
            "balance_after_cents": (
                to_cents(line.balanceAfter) if line.balanceAfter is not None else None
            ),
            "end_to_end_id": line.endToEndId,
            "original_end_to_end_id": line.originalEndToEndId,
            "idempotency_key": line.idempotencyKey,
            "txid": line.txId,
            "infraction_id": line.infractionId,
            "booked_at": read_timestamp(line.createdAt),
            "fee_cents": to_cents(line.feeAmount) if line.feeAmount is not None else None,
            "inbox_item_id": item.id,
        },
    )


def handle_balance(session: Session, item: InboxItem) -> None:
    reading = validate(BalanceReading, parse_payload(item), "balance reading")
    taken_at = read_timestamp(reading.takenAt)
    if taken_at is None:
        raise PermanentItemError("balance reading without a readable time")
    insert_ignore(
        session,
        BalanceSnapshot,
        {
            "taken_at": taken_at,
            "available_cents": to_cents(reading.available),
            "inbox_item_id": item.id,
        },
    )
