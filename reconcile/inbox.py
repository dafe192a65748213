"""The inbox: every item that arrives, by webhook or by polling, stored once per business
key. Idempotency comes from the unique key and one upsert statement per dialect, never
from reading first."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, col

from reconcile.models import InboxItem, ItemStatus, Source, WebhookDelivery
from reconcile.timeutil import utcnow


def dump_json(value: Any) -> str:
    """JSON text of a payload parsed with ``Decimal`` numbers (kept exact, as strings)."""

    def default(obj: object) -> object:
        if isinstance(obj, Decimal):
            return str(obj)
        raise TypeError(f"not JSON serialisable: {type(obj).__name__}")

    return json.dumps(value, default=default, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class NewItem:
    kind: str
    key: str
    payload: str
    status: str = ItemStatus.PENDING.value


@dataclass
class StoreResult:
    item_ids: list[int] = field(default_factory=list)
    new_ids: list[int] = field(default_factory=list)
    duplicates: int = 0
    """Items of this call that were already in the inbox (or repeated within the call)."""


def record_delivery(
    session: Session,
    *,
    route: str,
    remote_addr: str | None,
    headers: Mapping[str, str],
    body: bytes,
    item_count: int,
) -> int:
    delivery = WebhookDelivery(
        route=route,
        remote_addr=remote_addr,
        headers=json.dumps(dict(headers), ensure_ascii=False),
        body=body,
        item_count=item_count,
    )
    session.add(delivery)
    session.flush()
    assert delivery.id is not None
    return delivery.id


def store_items(
    session: Session,
    items: Sequence[NewItem],
    *,
    source: Source,
    delivery_id: int | None = None,
    now: datetime | None = None,
) -> StoreResult:
    """Insert new items, count repeats of known ones; one statement for the whole batch."""
    result = StoreResult()
    if not items:
        return result
    now = now or utcnow()
    sightings = Counter(item.key for item in items)
    first_by_key: dict[str, NewItem] = {}
    for item in items:
        first_by_key.setdefault(item.key, item)
    is_webhook = source is Source.WEBHOOK
    rows = [
        {
            "source": source.value,
            "kind": item.kind,
            "key": key,
            "payload": item.payload,
            "status": item.status,
            "delivery_id": delivery_id,
            "received_at": now,
            "last_seen_at": now,
            "webhook_at": now if is_webhook else None,
            "poll_at": None if is_webhook else now,
            "webhook_count": sightings[key] if is_webhook else 0,
            "poll_count": 0 if is_webhook else sightings[key],
            "attempts": 0,
        }
        # A stable key order keeps concurrent batches from deadlocking on PostgreSQL.
        for key, item in sorted(first_by_key.items())
    ]
    table = InboxItem.__table__  # type: ignore[attr-defined]
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    stmt = insert(table).values(rows)
    upsert = stmt.on_conflict_do_update(
        index_elements=[table.c.key],
        set_={
            "last_seen_at": stmt.excluded.last_seen_at,
            "webhook_count": table.c.webhook_count + stmt.excluded.webhook_count,
            "poll_count": table.c.poll_count + stmt.excluded.poll_count,
            "webhook_at": func.coalesce(table.c.webhook_at, stmt.excluded.webhook_at),
            "poll_at": func.coalesce(table.c.poll_at, stmt.excluded.poll_at),
        },
    ).returning(table.c.id, table.c.key, table.c.webhook_count + table.c.poll_count)
    for item_id, key, seen in session.execute(upsert).all():
        result.item_ids.append(item_id)
        # The row was created by this statement exactly when it has been seen only now.
        if seen == sightings[key]:
            result.new_ids.append(item_id)
            result.duplicates += sightings[key] - 1
        else:
            result.duplicates += sightings[key]
    return result


def claim_for_redispatch(
    session: Session, *, older_than: datetime, limit: int, now: datetime | None = None
) -> list[int]:
    """Pending items nobody has (re)sent for a while: stamp them and return their ids.

    SKIP LOCKED lets several sweepers run at once without handing out the same rows.
    """
    now = now or utcnow()
    stale = (
        select(col(InboxItem.id))
        .where(
            col(InboxItem.status) == ItemStatus.PENDING.value,
            func.coalesce(InboxItem.dispatched_at, InboxItem.received_at) < older_than,
        )
        .order_by(col(InboxItem.received_at))
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    stmt = (
        update(InboxItem)
        .where(col(InboxItem.id).in_(stale.scalar_subquery()))
        .values(dispatched_at=now)
        .returning(col(InboxItem.id))
    )
    return sorted(session.execute(stmt).scalars().all())


def oldest_pending_received_at(session: Session) -> datetime | None:
    stmt = select(func.min(InboxItem.received_at)).where(
        col(InboxItem.status) == ItemStatus.PENDING.value
    )
    value: datetime | None = session.execute(stmt).scalar_one_or_none()
    return value


def replay(session: Session, item_id: int) -> InboxItem | None:
    """Make an item pending again (after a fix for what failed it, or to re-run it)."""
    item = session.get(InboxItem, item_id)
    if item is None:
        return None
    item.status = ItemStatus.PENDING.value
    item.error = None
    item.dispatched_at = None
    item.processed_at = None
    return item


def ignore(session: Session, item_id: int, reason: str) -> InboxItem | None:
    """An operator's decision that an item needs no processing; the reason is kept."""
    item = session.get(InboxItem, item_id)
    if item is None:
        return None
    item.status = ItemStatus.IGNORED.value
    item.error = f"ignored: {reason}"
    return item
