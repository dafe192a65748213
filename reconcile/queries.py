"""Read models for the CLI and dashboards."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import case, func, select
from sqlmodel import Session, col

from reconcile.masking import mask_text
from reconcile.models import DeliveryItem, InboxItem, InboxRef, PixReceived, WebhookDelivery
from reconcile.payloads.refs import Refs, item_refs
from reconcile.timeutil import as_utc


def _iso(value: datetime | None) -> str | None:
    return as_utc(value).isoformat() if value is not None else None


def item_payload(item: InboxItem) -> Any:
    try:
        return json.loads(item.payload, parse_float=Decimal)
    except ValueError:
        return None


def refs_of(item: InboxItem) -> Refs:
    return item_refs(item.kind, item_payload(item))


def warnings_of(item: InboxItem) -> list[dict[str, str]]:
    if not item.warnings:
        return []
    found: list[dict[str, str]] = json.loads(item.warnings)
    return found


def inbox_item_view(item: InboxItem) -> dict[str, Any]:
    return {
        "id": item.id,
        "source": item.source,
        "kind": item.kind,
        "key": item.key,
        "status": item.status,
        "received_at": _iso(item.received_at),
        "webhook_at": _iso(item.webhook_at),
        "poll_at": _iso(item.poll_at),
        "processed_at": _iso(item.processed_at),
        "webhook_count": item.webhook_count,
        "poll_count": item.poll_count,
        "duplicates": item.duplicates,
        "attempts": item.attempts,
        # Masked again when shown: a reason stored before it was masked on the way in, or
        # a value a database refusal quoted.
        "error": None if item.error is None else mask_text(item.error),
        "refs": refs_of(item),
        "warnings": warnings_of(item),
    }


def list_inbox(
    session: Session, *, status: str | None = None, source: str | None = None, limit: int = 100
) -> list[InboxItem]:
    stmt = select(InboxItem).order_by(col(InboxItem.id).desc()).limit(limit)
    if status:
        stmt = stmt.where(col(InboxItem.status) == status)
    if source:
        stmt = stmt.where(col(InboxItem.source) == source)
    return list(session.execute(stmt).scalars())


def items_by_ref(
    session: Session,
    ref: str,
    *,
    status: str | None = None,
    source: str | None = None,
    limit: int = 100,
) -> list[InboxItem]:
    """Every item that carries ``ref`` under any name, newest first (through the
    ``inbox_ref`` index: one range of its primary key)."""
    carrying = select(col(InboxRef.item_id)).where(col(InboxRef.ref) == ref)
    stmt = (
        select(InboxItem)
        .where(col(InboxItem.id).in_(carrying))
        .order_by(col(InboxItem.id).desc())
        .limit(limit)
    )
    if status:
        stmt = stmt.where(col(InboxItem.status) == status)
    if source:
        stmt = stmt.where(col(InboxItem.source) == source)
    return list(session.execute(stmt).scalars())


def deliveries_of(session: Session, item_ids: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
    """The webhook deliveries that carried each item — the one that brought it and every
    repeat — oldest first (their bodies are in ``webhook_delivery``)."""
    found: dict[int, list[dict[str, Any]]] = {item_id: [] for item_id in item_ids}
    if not item_ids:
        return found
    ids = list(item_ids)
    first = select(col(InboxItem.id), col(InboxItem.delivery_id)).where(
        col(InboxItem.id).in_(ids), col(InboxItem.delivery_id).is_not(None)
    )
    again = select(col(DeliveryItem.item_id), col(DeliveryItem.delivery_id)).where(
        col(DeliveryItem.item_id).in_(ids)
    )
    pairs = {(item_id, delivery_id) for item_id, delivery_id in session.execute(first.union(again))}
    deliveries = {
        delivery.id: delivery
        for delivery in session.execute(
            select(WebhookDelivery).where(
                col(WebhookDelivery.id).in_(sorted({d for _, d in pairs}))
            )
        ).scalars()
    }
    for item_id, delivery_id in sorted(pairs):
        delivery = deliveries[delivery_id]
        found[item_id].append(
            {
                "id": delivery_id,
                "route": delivery.route,
                "remote_addr": delivery.remote_addr,
                "received_at": _iso(delivery.received_at),
                "item_count": delivery.item_count,
            }
        )
    return found


def inbox_summary(session: Session) -> dict[str, int]:
    """Counts behind the demo summary and the health of the pipeline."""
    row = session.execute(
        select(
            func.count(),
            func.coalesce(
                func.sum(
                    case((col(InboxItem.webhook_count) > 1, InboxItem.webhook_count - 1), else_=0)
                ),
                0,
            ),
        )
    ).one()
    by_status: dict[str, int] = {
        status: count
        for status, count in session.execute(
            select(col(InboxItem.status), func.count()).group_by(col(InboxItem.status))
        ).all()
    }
    webhook = session.execute(
        select(func.count()).where(col(InboxItem.webhook_count) > 0)
    ).scalar_one()
    poll_only = session.execute(
        select(func.count()).where(col(InboxItem.webhook_count) == 0, col(InboxItem.poll_count) > 0)
    ).scalar_one()
    pix_rows, pix_cents = session.execute(
        select(func.count(), func.coalesce(func.sum(PixReceived.amount_cents), 0))
    ).one()
    confirmation: dict[str, tuple[int, int]] = {
        status: (count, int(cents))
        for status, count, cents in session.execute(
            select(
                col(PixReceived.confirmation),
                func.count(),
                func.coalesce(func.sum(PixReceived.amount_cents), 0),
            ).group_by(col(PixReceived.confirmation))
        ).all()
    }
    confirmed = [confirmation.get(s, (0, 0)) for s in ("confirmed", "not_required")]
    return {
        "items": row[0],
        "duplicates": int(row[1]),
        "via_webhook": webhook,
        "only_by_polling": poll_only,
        "pending": by_status.get("pending", 0),
        "processed": by_status.get("processed", 0),
        "failed": by_status.get("failed", 0),
        "unsupported": by_status.get("unsupported", 0),
        "pix_received": pix_rows,
        "pix_received_cents": int(pix_cents),
        "pix_confirmed": sum(count for count, _ in confirmed),
        "pix_confirmed_cents": sum(cents for _, cents in confirmed),
        "pix_pending_confirmation": confirmation.get("pending", (0, 0))[0],
        "pix_unconfirmed_webhook": confirmation.get("unconfirmed_webhook", (0, 0))[0],
        "pix_amount_mismatch": confirmation.get("amount_mismatch", (0, 0))[0],
    }


# Verdicts counted among a day's movements that are none: a repeat of one, and a
# notification of money the provider's API denies or does not know.
NOT_MOVEMENTS = frozenset({"duplicate", "unconfirmed_webhook"})


def webhook_coverage(counts: dict[str, int] | None) -> dict[str, Any]:
    """Movements of a day by how pixrecon learned of them, from its latest run's verdicts:
    ``missing_webhook`` is a movement known only from the API or the statement (found by
    polling); every other verdict is of a movement a webhook announced, except the ones
    the API does not stand behind (``unconfirmed_webhook``, a possible forgery: no
    movement at all) and repeats. Read from the report, not by scanning the day's Pix
    again: a run has already counted them."""
    if not counts:
        return {"webhook": None, "poll_only": None, "share": None}
    movements = sum(n for status, n in counts.items() if status not in NOT_MOVEMENTS)
    poll_only = counts.get("missing_webhook", 0)
    webhook = movements - poll_only
    return {
        "webhook": webhook,
        "poll_only": poll_only,
        "share": webhook / movements if movements else None,
    }
