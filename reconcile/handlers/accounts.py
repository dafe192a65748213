"""Accounts API notifications: movements (cash-outs, credits, refunds) and infractions."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import and_, case, func, literal, literal_column
from sqlmodel import Session

from reconcile.db import dialect_of, insert_for, table_of
from reconcile.handlers.common import (
    PermanentItemError,
    confirmation_columns,
    parse_payload,
    require_key,
    upsert_latest,
    validate,
)
from reconcile.models import (
    OPEN_INFRACTION_STATES,
    AccountMovement,
    Confirmation,
    InboxItem,
    Infraction,
    PayoutReturn,
    Source,
    UtcDateTime,
)
from reconcile.money import InvalidAmount, parse_amount, to_cents
from reconcile.payloads import UNKNOWN_STATUS
from reconcile.payloads.accounts import (
    TYPE_OF_KIND,
    CashoutData,
    Identified,
    InfractionData,
    MovementData,
)
from reconcile.payloads.pix import moved_later
from reconcile.payloads.refs import notification_data
from reconcile.payloads.tolerant import read_timestamp
from reconcile.timeutil import utcnow

# Later states outrank earlier ones, so an old notification arriving late changes nothing.
MOVEMENT_RANK = {
    "PROCESSING": 1,
    "LIQUIDATED": 2,
    "CANCELED": 2,
    "REJECTED": 2,
    "PARTIALLY_REFUNDED": 3,
    "REFUNDED": 4,
}
# A status ranked here or above is the movement's outcome: it will not be processing again.
OUTCOME_RANK = MOVEMENT_RANK["LIQUIDATED"]
INFRACTION_RANK = {
    "OPEN": 1,
    "ACKNOWLEDGED": 2,
    "AGREED": 3,
    "DISAGREED": 3,
    "CLOSED": 4,
    "CANCELED": 4,
    "CANCELLED": 4,
}


def _data(item: InboxItem) -> tuple[str, Any]:
    """The type (the item's kind says it, whether the body or the route named it) and the
    object, under ``data`` or ``payload``."""
    data = notification_data(parse_payload(item))
    if not isinstance(data, dict):
        raise PermanentItemError("accounts notification without a data object")
    return TYPE_OF_KIND.get(item.kind, item.kind.upper()), data


def _confirmation(item: InboxItem, amount_cents: int | None) -> dict[str, Any]:
    """Either way the status an earlier look-up found the API stating against the row's
    previous state (``confirmed_status``) is not this state's: its own look-up says it
    again."""
    return confirmation_columns(
        item,
        {"confirmed_amount_cents": amount_cents, "confirmed_status": None},
        {"confirmed_amount_cents": None, "confirmed_status": None},
    )


def _when(created_at: str | None, end_to_end_id: str | None) -> dict[str, Any]:
    created = read_timestamp(created_at)
    return {"provider_created_at": created, "moved_at": moved_later(created, end_to_end_id)}


def _seen(item: InboxItem, status: str) -> Callable[[Any], dict[str, Any]]:
    """What a notification updating a stored row writes besides its state: when the row
    was first heard of stays the first time (``first_seen_at``: a payout first heard of
    after its day's date lag is the day it was heard of's, ``matching/payouts.py``), and
    the times of an outcome replacing a processing state (``_outcome_seen``)."""
    outcome = _outcome_seen(item, status)
    table = table_of(AccountMovement)

    def on_update(excluded: Any) -> dict[str, Any]:
        kept = {"first_seen_at": func.coalesce(table.c.first_seen_at, excluded.first_seen_at)}
        return {**kept, **(outcome(excluded) if outcome is not None else {})}

    return on_update


def _outcome_seen(item: InboxItem, status: str) -> Callable[[Any], dict[str, Any]] | None:
    """For an outcome replacing a processing state: when each was received
    (``outcome_seen_at``, ``processing_seen_at``). A payout seen processing before its
    day's date lag ended and its outcome only after stood processing at the day's end;
    its own day, re-run later, judges it so (``matching/payouts.py``). A row first stored
    with its outcome keeps neither: nothing says it was ever processing."""
    if MOVEMENT_RANK.get(status, 0) < OUTCOME_RANK:
        return None
    table = table_of(AccountMovement)
    replaced = table.c.rank < OUTCOME_RANK * 1000
    # The stored row's item, before this update points it at the outcome's. Written out:
    # SQLAlchemy does not correlate a subquery with the row an upsert updates.
    processing = literal_column(
        "(SELECT inbox_item.received_at FROM inbox_item"
        " WHERE inbox_item.id = account_movement.inbox_item_id)",
        UtcDateTime,
    )
    return lambda _excluded: {
        "outcome_seen_at": case(
            (replaced, literal(item.received_at, UtcDateTime)), else_=table.c.outcome_seen_at
        ),
        "processing_seen_at": case((replaced, processing), else_=table.c.processing_seen_at),
    }


def _reference(data: Identified, what: str) -> str:
    require_key(data, what)
    reference = data.reference()
    assert reference is not None
    return reference


def handle_movement(session: Session, item: InboxItem) -> None:
    kind, raw = _data(item)
    data = validate(MovementData, raw, f"{kind} notification")
    amount = data.payment.amount if data.payment else None
    refunds = [r for _, r in data.returns()]
    refunded = sum(
        (r.pixRefundAmount for r in refunds if r.pixRefundAmount is not None),
        start=parse_amount("0"),
    )
    reference = _reference(data, f"{kind} notification")
    status = data.status or UNKNOWN_STATUS
    upsert_latest(
        session,
        AccountMovement,
        ["type", "reference"],
        {
            "type": kind,
            "reference": reference,
            "movement_id": data.id,
            "idempotency_key": data.idempotencyKey,
            "end_to_end_id": data.endToEndId,
            "status": status,
            "error_code": data.errorCode,
            "message": None,
            "amount_cents": to_cents(amount) if amount is not None else None,
            "refunded_cents": to_cents(refunded),
            "credit_debit_type": data.creditDebitType,
            "txid": data.txId,
            **_when(data.createdAt, data.endToEndId),
            "rank": MOVEMENT_RANK.get(status, 0) * 1000 + len(refunds),
            "inbox_item_id": item.id,
            "first_seen_at": item.received_at,
            **_confirmation(item, to_cents(amount) if amount is not None else None),
        },
        _seen(item, status),
    )
    if kind in ("TRANSFER", "CASHOUT") or (kind == "REFUND" and data.idempotencyKey):
        _store_returns(session, item, data.idempotencyKey or reference, data)


def _store_returns(session: Session, item: InboxItem, key: str, data: MovementData) -> None:
    """Each return a payout's notification lists, once: a later notification listing it
    again may change its status or amount, never the day it happened nor the item that
    first brought it (the refunds matcher and the bridge count it on that day). A poll is
    the provider's API listing the payout: its amounts are also the API's word
    (``confirmed_amount_cents``), which a notification never replaces."""
    polled = item.source == Source.POLL.value
    rows = {
        (r.endToEndId or f"{key}#{n}"): {
            "payout_key": key,
            "ref": r.endToEndId or f"{key}#{n}",
            "end_to_end_id": r.endToEndId,
            "status": r.status,
            "amount_cents": _return_cents(r.pixRefundAmount),
            "confirmed_amount_cents": (
                api_return_cents(r.status, _return_cents(r.pixRefundAmount)) if polled else None
            ),
            # Without the provider's time, the day it was first heard of.
            "returned_at": read_timestamp(r.createdAt) or item.received_at,
            "rank": MOVEMENT_RANK.get(r.status or "", 0),
            "inbox_item_id": item.id,
            "updated_at": utcnow(),
        }
        for n, r in data.returns()
    }
    if not rows:
        return
    table = table_of(PayoutReturn)
    stmt = insert_for(dialect_of(session))(table)
    session.execute(
        stmt.on_conflict_do_update(
            index_elements=[table.c.ref],
            set_={
                **{
                    name: stmt.excluded[name]
                    for name in ("status", "amount_cents", "rank", "updated_at")
                },
                "confirmed_amount_cents": func.coalesce(
                    stmt.excluded.confirmed_amount_cents, table.c.confirmed_amount_cents
                ),
            },
            where=table.c.rank <= stmt.excluded.rank,
        ),
        # One row a return: a statement may not touch the same row twice.
        list(rows.values()),
    )


def _return_cents(amount: Decimal | None) -> int | None:
    return to_cents(amount) if amount is not None else None


def api_return_cents(status: str | None, cents: int | None) -> int | None:
    """What the provider's API stands behind of a return it lists: nothing of one it lists
    as not made."""
    return 0 if status in NOT_RETURNED else cents


NOT_RETURNED = ("REJECTED", "CANCELED")


def handle_cashout(session: Session, item: InboxItem) -> None:
    _, raw = _data(item)
    data = validate(CashoutData, raw, "CASHOUT notification")
    beside = parse_payload(item)
    error_code = data.errorCode or (beside.get("errorCode") if isinstance(beside, dict) else None)
    reference = _reference(data, "CASHOUT notification")
    status = data.status or UNKNOWN_STATUS
    upsert_latest(
        session,
        AccountMovement,
        ["type", "reference"],
        {
            "type": "CASHOUT",
            "reference": reference,
            "movement_id": data.id,
            "idempotency_key": data.idempotencyKey,
            "end_to_end_id": data.endToEndId,
            "status": status,
            # The envelope's is not validated with the model: only a code, never any text.
            "error_code": error_code[:32] if isinstance(error_code, str) else None,
            "message": data.message,
            **_when(data.createdAt, data.endToEndId),
            "rank": MOVEMENT_RANK.get(status, 0) * 1000,
            "inbox_item_id": item.id,
            "first_seen_at": item.received_at,
            **_confirmation(item, None),
        },
        _seen(item, status),
    )


def _infraction_amount(
    raw: dict[str, Any], names: tuple[str, ...] = ("amount", "transactionAmount", "value", "valor")
) -> int | None:
    # The amount's field name is not public; take the first one that reads as money.
    for name in names:
        if name in raw:
            try:
                return to_cents(parse_amount(raw[name]))
            except InvalidAmount:
                return None
    return None


# The MED's analysis period: the receiving PSP has seven days from the case's opening
# (Regulamento Pix, MED). Used when the provider does not state the deadline itself.
MED_ANALYSIS = timedelta(days=7)


def _deadline(raw: dict[str, Any], opened: datetime | None) -> datetime | None:
    stated = read_timestamp(raw.get("analysisDeadline") or raw.get("deadline"))
    if stated is not None:
        return stated
    # read_timestamp keeps instants far enough from datetime's limits for this to fit.
    return opened + MED_ANALYSIS if opened is not None else None


def handle_infraction(session: Session, item: InboxItem) -> None:
    _, raw = _data(item)
    data = validate(InfractionData, raw, "INFRACTION notification")
    require_key(data, "INFRACTION notification")
    assert data.id is not None
    status = data.status or UNKNOWN_STATUS
    opened = read_timestamp(raw.get("createdAt"))
    changed = read_timestamp(raw.get("closedAt"))
    if status.upper() in OPEN_INFRACTION_STATES:
        changed = changed or opened
    elif changed is None:
        # A notification of a closed case need not say when it closed. Dated at its
        # opening, a case closed days later would read closed on its first day, and that
        # day's answer would change with the day it is asked: unknown (its row's own time
        # meanwhile), until polling asks the API (polling/accounts.py).
        changed = read_timestamp(raw.get("updatedAt"))
    closing = status.upper() not in OPEN_INFRACTION_STATES
    polled = item.source == Source.POLL.value
    debited = _infraction_amount(raw, ("debitedAmount", "debited_amount"))
    upsert_latest(
        session,
        Infraction,
        ["infraction_id"],
        {
            "infraction_id": data.id,
            "status": status,
            "amount_cents": _infraction_amount(raw),
            "end_to_end_id": data.endToEndId,
            "debited_cents": debited,
            "provider_updated_at": changed,
            "blocked_cents": _infraction_amount(raw, ("blockedAmount", "blocked_amount")),
            "opened_at": opened,
            "deadline_at": _deadline(raw, opened),
            "rank": INFRACTION_RANK.get(status.upper(), 0),
            "inbox_item_id": item.id,
            **_closing_confirmation(closing=closing, polled=polled, debited=debited),
        },
        lambda excluded: _case_kept(excluded, raw, closing=closing, polled=polled),
    )


def _closing_confirmation(*, closing: bool, polled: bool, debited: int | None) -> dict[str, Any]:
    """A case's closing moves money (its debit): polled, the API's word as it stands;
    notified, to be confirmed by the API before its debit counts
    (``confirm_closed_infractions``), at once, whenever an earlier closing's look-up was
    put off. An open case moves none: polling asks for it again while it stays open
    (``refresh_open_infractions``)."""
    if polled:
        return {
            "confirmation": Confirmation.CONFIRMED.value,
            "confirmed_debited_cents": debited if closing else None,
            "next_check_at": None,
        }
    return {
        "confirmation": Confirmation.PENDING.value if closing else None,
        "confirmed_debited_cents": None,
        "next_check_at": None,
    }


def _case_kept(
    excluded: Any, raw: dict[str, Any], *, closing: bool, polled: bool
) -> dict[str, Any]:
    """What a later notification of a case leaves as stored: what it does not say (a
    notification may carry only the id and status), the deadline unless it states one,
    and once the case is closing the money blocked while it was open (a block released
    reads 0). A day the case was open at the end of is judged with what it stood at then
    (``med_exposure``), whenever it is asked. The API's word on a closing a notification
    brought first keeps that notification's debit beside its own: one the API contradicts
    is an exception (possible forgery), not overwritten out of sight."""
    table = table_of(Infraction)

    def unless_missing(name: str) -> Any:
        return func.coalesce(excluded[name], table.c[name])

    kept = {name: unless_missing(name) for name in ("amount_cents", "end_to_end_id", "opened_at")}
    if read_timestamp(raw.get("analysisDeadline") or raw.get("deadline")) is None:
        kept["deadline_at"] = func.coalesce(table.c.deadline_at, excluded.deadline_at)
    if closing:
        kept["blocked_cents"] = func.coalesce(table.c.blocked_cents, excluded.blocked_cents)
    if closing and polled:
        # Notified and not yet the API's (or trusted without a look-up, by policy).
        notified = table.c.confirmation.in_(
            (Confirmation.PENDING.value, Confirmation.NOT_REQUIRED.value)
        )
        contradicted = and_(
            notified,
            table.c.debited_cents.is_not(None),
            table.c.debited_cents.is_distinct_from(excluded.debited_cents),
        )
        kept["debited_cents"] = case(
            (notified, table.c.debited_cents), else_=excluded.debited_cents
        )
        kept["confirmation"] = case(
            (contradicted, literal(Confirmation.AMOUNT_MISMATCH.value)),
            else_=literal(Confirmation.CONFIRMED.value),
        )
    return kept
