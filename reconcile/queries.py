"""Read models for the CLI and dashboards."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import case, func, select
from sqlmodel import Session, col

from reconcile.models import InboxItem, PixReceived
from reconcile.timeutil import as_utc


def _iso(value: datetime | None) -> str | None:
    return as_utc(value).isoformat() if value is not None else None


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
        "error": item.error,
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
