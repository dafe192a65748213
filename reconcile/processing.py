"""Turning inbox items into domain rows. Idempotent: an item is processed at most once,
and every domain write is keyed, so a re-delivered message changes nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import Engine, select
from sqlmodel import col

from reconcile.db import session_scope
from reconcile.handlers import HANDLERS, PermanentItemError
from reconcile.logs import get_logger
from reconcile.models import InboxItem, ItemStatus
from reconcile.timeutil import utcnow

log = get_logger(__name__)


@dataclass
class ProcessReport:
    processed: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    unsupported: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    """Already handled (a duplicate message) or unknown ids."""


def process_items(engine: Engine, item_ids: Sequence[int]) -> ProcessReport:
    """Process pending items in one transaction; rows are locked so that two workers
    handed the same id do the work once."""
    report = ProcessReport()
    if not item_ids:
        return report
    with session_scope(engine) as session:
        stmt = (
            select(InboxItem)
            .where(col(InboxItem.id).in_(sorted(set(item_ids))))
            .order_by(col(InboxItem.id))
            .with_for_update()
        )
        items = {item.id: item for item in session.execute(stmt).scalars()}
        now = utcnow()
        for item_id in sorted(set(item_ids)):
            item = items.get(item_id)
            if item is None or item.status != ItemStatus.PENDING.value:
                report.skipped.append(item_id)
                continue
            item.attempts += 1
            handler = HANDLERS.get(item.kind)
            if handler is None:
                item.status = ItemStatus.UNSUPPORTED.value
                report.unsupported.append(item_id)
                continue
            try:
                with session.begin_nested():
                    handler(session, item)
            except PermanentItemError as exc:
                item.status = ItemStatus.FAILED.value
                item.error = str(exc)
                report.failed.append(item_id)
                log.warning("inbox_item_failed", item_id=item_id, kind=item.kind, error=str(exc))
                continue
            item.status = ItemStatus.PROCESSED.value
            item.processed_at = now
            report.processed.append(item_id)
    return report
