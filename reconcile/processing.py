"""Turning inbox items into domain rows. Idempotent: an item is processed at most once,
and every domain write is keyed, so a re-delivered message changes nothing.

A batch is written a kind at a time: the rows of every Pix of the batch in one statement
(``reconcile.handlers.BATCH_HANDLERS``), no savepoint. Should that statement fail, the
transaction is rolled back and the batch done again item by item, each in a savepoint, so
one bad item fails alone and the rest are stored."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Engine, select, update
from sqlalchemy.exc import DataError, IntegrityError
from sqlmodel import Session, col

from reconcile.db import id_in, session_scope, table_of
from reconcile.handlers import BATCH_HANDLERS, HANDLERS, PermanentItemError
from reconcile.logs import get_logger
from reconcile.masking import mask_text
from reconcile.metrics import ITEM_LATENCY, ITEMS_PROCESSED
from reconcile.models import InboxItem, ItemStatus
from reconcile.timeutil import as_utc, utcnow

log = get_logger(__name__)

# What a batch statement can meet that one of its items, alone, would have met too.
ITEM_ERRORS = (IntegrityError, DataError)


@dataclass
class ProcessReport:
    processed: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    unsupported: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    """Already handled (a duplicate message) or unknown ids."""
    outcomes: list[tuple[str, str, float]] = field(default_factory=list)
    """(kind, status it ended in, seconds since it arrived) of each item handled."""

    def count(self) -> None:
        """Into the metrics, once the transaction has committed."""
        for kind, status, waited in self.outcomes:
            ITEMS_PROCESSED.labels(kind, status).inc()
            if status == ItemStatus.PROCESSED.value:
                ITEM_LATENCY.labels(kind).observe(waited)

    def ended(self, item: InboxItem, status: ItemStatus, now: datetime) -> None:
        self.outcomes.append(
            (item.kind, status.value, (now - as_utc(item.received_at)).total_seconds())
        )


def process_items(engine: Engine, item_ids: Sequence[int]) -> ProcessReport:
    """Process pending items in one transaction; rows are locked so that two workers
    handed the same id do the work once."""
    if not item_ids:
        return ProcessReport()
    ids = sorted(set(item_ids))
    try:
        with session_scope(engine) as session:
            report = _process(session, ids, by_item=False)
    except ITEM_ERRORS as exc:
        log.info("batch_retried_item_by_item", items=len(ids), error=type(exc).__name__)
        with session_scope(engine) as session:
            report = _process(session, ids, by_item=True)
    report.count()
    return report


def _process(session: Session, ids: list[int], *, by_item: bool) -> ProcessReport:
    report = ProcessReport()
    stmt = (
        select(InboxItem)
        .where(id_in(session, table_of(InboxItem).c.id, ids))
        .order_by(col(InboxItem.id))
        .with_for_update()
    )
    items = {item.id: item for item in session.execute(stmt).scalars()}
    now = utcnow()
    batches: dict[str, list[InboxItem]] = {}
    for item_id in ids:
        item = items.get(item_id)
        if item is None or item.status != ItemStatus.PENDING.value:
            report.skipped.append(item_id)
            continue
        if not by_item and item.kind in BATCH_HANDLERS:
            batches.setdefault(item.kind, []).append(item)
        else:
            item.attempts += 1
            _one(session, item, report, now)
    for kind, batch in batches.items():
        handler = BATCH_HANDLERS[kind]
        rows, stored = [], []
        for item in batch:
            try:
                rows.append(handler.row(item))
            except PermanentItemError as exc:
                item.attempts += 1
                _failed(item, exc, report, now)
                continue
            stored.append(item)
        handler.write(session, rows)
        _mark_processed(session, stored, now)
        for item in stored:
            report.processed.append(_id(item))
            report.ended(item, ItemStatus.PROCESSED, now)
    return report


def _mark_processed(session: Session, items: Sequence[InboxItem], now: datetime) -> None:
    """One UPDATE for the batch's items, where changing each object would make the ORM
    send one UPDATE an item (two, with the attempt count flushed before the insert): 39 %
    of a worker thread's time in the end-to-end profile. The objects are not used again
    in this transaction, so they are left as they were loaded."""
    if not items:
        return
    session.execute(
        update(InboxItem)
        .where(id_in(session, table_of(InboxItem).c.id, [_id(item) for item in items]))
        .values(
            status=ItemStatus.PROCESSED.value,
            processed_at=now,
            attempts=col(InboxItem.attempts) + 1,
        )
        .execution_options(synchronize_session=False)
    )


def _one(session: Session, item: InboxItem, report: ProcessReport, now: datetime) -> None:
    handler = HANDLERS.get(item.kind)
    if handler is None:
        item.status = ItemStatus.UNSUPPORTED.value
        report.unsupported.append(_id(item))
        report.ended(item, ItemStatus.UNSUPPORTED, now)
        return
    try:
        with session.begin_nested():
            handler(session, item)
    except (PermanentItemError, *ITEM_ERRORS) as exc:
        _failed(item, exc, report, now)
        return
    _processed(item, report, now)


def _id(item: InboxItem) -> int:
    assert item.id is not None
    return item.id


def _processed(item: InboxItem, report: ProcessReport, now: datetime) -> None:
    item.status = ItemStatus.PROCESSED.value
    item.processed_at = now
    report.processed.append(_id(item))
    report.ended(item, ItemStatus.PROCESSED, now)


def _failed(item: InboxItem, exc: Exception, report: ProcessReport, now: datetime) -> None:
    error = str(exc) if isinstance(exc, PermanentItemError) else _database_refusal(exc)
    item.status = ItemStatus.FAILED.value
    item.error = error
    report.failed.append(_id(item))
    report.ended(item, ItemStatus.FAILED, now)
    log.warning("inbox_item_failed", item_id=item.id, kind=item.kind, error=error)


def _database_refusal(exc: Exception) -> str:
    """What the database refused, in one line: its first line names the column or the
    constraint; a value it quotes is masked like any text that may hold a document."""
    cause = getattr(exc, "orig", None) or exc
    lines = str(cause).strip().splitlines()
    first = mask_text(lines[0]) if lines else ""
    return f"the database refused the item's row: {type(cause).__name__}: {first}"
