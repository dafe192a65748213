"""Retention: what pixrecon keeps of a delivery once its day is settled.

Raw bodies (an inbox item's payload, a webhook delivery's body, a refused delivery) exist
so that a person can see what arrived while the money is still being worked out. Once an
item is older than the retention period, final (processed or ignored), its business day's
latest run says ``reconciled`` and no remaining exception case refers to it, nobody needs
its raw form any more: the item is deleted, or — when a result row still points at it
(every Pix received does) — kept without its payload, and the personal data of the result
rows that came from it (payer and debtor documents and names, free text) is masked.
Results, runs, verdicts, cases and operator actions are never deleted; nor is an item a
provider's listing sent that could not be read (``unread_item``): it holds no raw body and
no personal data, only that its days were not read whole, and deleted it would let a day
judged again say ``reconciled`` of a day nobody read whole. A read that reads it clears it
(``reconcile/unread.py``); a prune counts those older than the period, for the operator.

Everything else past the period is kept as it is: items still pending, failed or
unsupported (a person must act on them), items of days without a ``reconciled`` verdict,
and items an open or acknowledged case refers to. A later prune releases them once that
changes.

Work goes in short transactions of at most ``batch`` items, so that the receiver, which
inserts items meanwhile, never waits long for a lock (on SQLite a writer holds the one
write lock for its whole transaction), and an interrupted prune loses at most one batch
and can simply be run again: what it already did is recognisable (the payload marker,
bodies already empty, masked values) and is not counted twice."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import (
    CursorResult,
    Engine,
    Table,
    and_,
    bindparam,
    delete,
    func,
    not_,
    or_,
    select,
    update,
)
from sqlmodel import Session, SQLModel

from reconcile.db import session_scope, table_of
from reconcile.masking import mask_document, mask_name, mask_text
from reconcile.models import (
    AccountMovement,
    BalanceSnapshot,
    CaseState,
    DeliveryItem,
    DeniedClaim,
    ExceptionCase,
    ExpectedPayment,
    InboxItem,
    InboxRef,
    Infraction,
    ItemStatus,
    OperatorAction,
    PayoutReturn,
    PixReceived,
    PixRefund,
    QuarantinedDelivery,
    ReconciliationItem,
    ReconciliationRun,
    Recurrence,
    RecurringCharge,
    StatementEntry,
    UnreadItem,
    WebhookDelivery,
)
from reconcile.timeutil import BUSINESS_TZ, as_utc, business_day_bounds, utcnow

# Small enough that a batch commits in well under a second on both databases, so the
# receiver's inserts never queue behind a prune for long.
DEFAULT_BATCH = 5000
# What an item keeps of its payload once the raw body is gone. JSON, because every reader
# of ``inbox_item.payload`` parses it; it says why the body is missing.
PRUNED_PAYLOAD = '{"pruned": "raw body removed after the retention period"}'
# Final statuses: nobody will process these items again. Pending, failed and unsupported
# items still need a person, whatever their age.
FINAL = (ItemStatus.PROCESSED.value, ItemStatus.IGNORED.value)
NEEDS_A_PERSON = (
    ItemStatus.PENDING.value,
    ItemStatus.FAILED.value,
    ItemStatus.UNSUPPORTED.value,
)
RECONCILED = "reconciled"
# Every table whose rows point at the inbox item they came from (a foreign key): such an
# item is kept, without its payload, for as long as the result is.
RESULT_TABLES: tuple[type[SQLModel], ...] = (
    PixReceived,
    PixRefund,
    AccountMovement,
    PayoutReturn,
    Infraction,
    Recurrence,
    RecurringCharge,
    ExpectedPayment,
    StatementEntry,
    BalanceSnapshot,
    DeniedClaim,
)
DOCUMENT, NAME, TEXT = "document", "name", "text"
# The personal data of result rows: a payer's or debtor's CPF/CNPJ and name, and free
# text a person typed (which may quote a document). Masked as the logs mask them.
PERSONAL_COLUMNS: dict[type[SQLModel], dict[str, str]] = {
    PixReceived: {"payer_document": DOCUMENT, "payer_name": NAME, "info_pagador": TEXT},
    ExpectedPayment: {"debtor_document": DOCUMENT, "debtor_name": NAME, "payer_request": TEXT},
    PixRefund: {"motivo": TEXT},
    AccountMovement: {"message": TEXT},
}

Progress = Callable[[str, int], None]
"""Called after every batch with what is being done and how many rows it touched."""


def mask_column(kind: str, value: str | None) -> str | None:
    """The masked value; masking a masked value changes nothing (a prune re-run is a
    no-op), which ``mask_document`` alone would not guarantee: it would mask the two
    digits a masked document keeps."""
    if value is None:
        return None
    if kind == DOCUMENT:
        return value if "*" in value else mask_document(value)
    if kind == NAME:
        return mask_name(value)
    return mask_text(value)


@dataclass
class PruneReport:
    """What a prune did (or, for a dry run, would do), per table."""

    now: datetime
    retention_days: int
    dry_run: bool
    cutoff: datetime
    deleted: Counter[str] = field(default_factory=Counter)
    """Rows deleted, per table."""
    raw_removed: Counter[str] = field(default_factory=Counter)
    """Rows kept whose raw body or payload was removed, per table."""
    masked: Counter[str] = field(default_factory=Counter)
    """Rows whose personal data was masked, per table."""
    kept: Counter[str] = field(default_factory=Counter)
    """Inbox items older than the period kept whole, by reason; and (``unread``) the items
    a listing sent that could not be read, older than the period, kept as every one is."""
    days: list[date] = field(default_factory=list)
    """The reconciled business days whose items were released."""
    interrupted: bool = False
    action_id: int | None = None

    @property
    def total(self) -> int:
        """Rows deleted, emptied of raw data or masked: the figure the job reports."""
        return (
            sum(self.deleted.values()) + sum(self.raw_removed.values()) + sum(self.masked.values())
        )

    def tables(self) -> dict[str, dict[str, int]]:
        names = sorted(set(self.deleted) | set(self.raw_removed) | set(self.masked))
        return {
            name: {
                "deleted": self.deleted[name],
                "raw_removed": self.raw_removed[name],
                "masked": self.masked[name],
            }
            for name in names
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "retention_days": self.retention_days,
            "cutoff": self.cutoff.isoformat(),
            "total": self.total,
            "tables": self.tables(),
            "kept": dict(sorted(self.kept.items())),
            "days": [day.isoformat() for day in self.days],
            "interrupted": self.interrupted,
            "recorded_as": self.action_id,
        }


def prune(
    engine: Engine,
    *,
    now: datetime,
    retention_days: int,
    actor: str,
    dry_run: bool = False,
    batch: int = DEFAULT_BATCH,
    on_progress: Progress | None = None,
) -> PruneReport:
    """Delete what the retention period releases and mask what stays (module docstring);
    with ``dry_run``, count the same and change nothing. Recorded in ``operator_action``
    either way — an interrupted prune too, with what it did before it stopped."""
    if retention_days < 1:
        raise ValueError("the retention period is at least one day")
    if batch < 1:
        raise ValueError("a batch holds at least one row")
    cutoff = as_utc(now) - timedelta(days=retention_days)
    report = PruneReport(
        now=as_utc(now), retention_days=retention_days, dry_run=dry_run, cutoff=cutoff
    )
    run = _Run(engine, report, batch, on_progress or (lambda _what, _n: None))
    try:
        for day in _released_days(engine, cutoff):
            run.release_day(day)
        run.quarantine()
        run.count_kept()
    except BaseException:
        report.interrupted = True
        _record(engine, report, actor, batch)
        raise
    _record(engine, report, actor, batch)
    return report


def _record(engine: Engine, report: PruneReport, actor: str, batch: int) -> None:
    selection = {
        "retention_days": report.retention_days,
        "cutoff": report.cutoff.isoformat(),
        "batch": batch,
    }
    detail = {
        "tables": report.tables(),
        "kept": dict(sorted(report.kept.items())),
        "days": len(report.days),
        "interrupted": report.interrupted,
    }
    with session_scope(engine) as session:
        action = OperatorAction(
            action="prune",
            actor=actor,
            at=utcnow(),
            selection=json.dumps(selection, sort_keys=True),
            dry_run=report.dry_run,
            count=report.total,
            detail=json.dumps(detail, sort_keys=True),
        )
        session.add(action)
        session.flush()
        report.action_id = action.id


# --- which days, which items ------------------------------------------------------------


def _latest_runs() -> Any:
    runs = table_of(ReconciliationRun)
    return (
        select(runs.c.business_date, func.max(runs.c.id).label("run_id"))
        .group_by(runs.c.business_date)
        .subquery()
    )


def _released_days(engine: Engine, cutoff: datetime) -> list[date]:
    """Business days that began before the cutoff and whose latest run — whatever its
    status: a run still going or one that failed is not an answer — is a completed
    ``reconciled``. A day with no run at all is not reconciled."""
    runs, latest = table_of(ReconciliationRun), _latest_runs()
    last_day = cutoff.astimezone(BUSINESS_TZ).date()
    stmt = (
        select(runs.c.business_date)
        .join(latest, runs.c.id == latest.c.run_id)
        .where(
            runs.c.status == "completed",
            runs.c.verdict == RECONCILED,
            runs.c.business_date <= last_day,
        )
        .order_by(runs.c.business_date)
    )
    with session_scope(engine) as session:
        return [row[0] for row in session.execute(stmt)]


def _still_released(session: Session, day: date) -> bool:
    """Asked again in every batch: a re-run of the day meanwhile may have found breaks."""
    runs = table_of(ReconciliationRun)
    found = session.execute(
        select(runs.c.status, runs.c.verdict)
        .where(runs.c.business_date == day)
        .order_by(runs.c.id.desc())
        .limit(1)
    ).first()
    return found is not None and found[0] == "completed" and found[1] == RECONCILED


def _case_held_items(session: Session) -> set[int]:
    """Items a remaining (open or acknowledged) case refers to: by a reference the item
    carries, or as the item behind the case's verdict in the run that last raised it."""
    cases, verdicts, refs = (
        table_of(ExceptionCase),
        table_of(ReconciliationItem),
        table_of(InboxRef),
    )
    remaining = [state.value for state in CaseState.remaining()]
    held = {
        int(item_id)
        for (item_id,) in session.execute(
            select(verdicts.c.inbox_item_id)
            .join(
                cases,
                and_(
                    verdicts.c.run_id == cases.c.last_seen_run_id,
                    verdicts.c.subject == cases.c.subject,
                    verdicts.c.ref == cases.c.ref,
                ),
            )
            .where(cases.c.state.in_(remaining), verdicts.c.inbox_item_id.is_not(None))
        )
    }
    names: set[str] = set()
    for subject, ref in session.execute(
        select(cases.c.subject, cases.c.ref).where(cases.c.state.in_(remaining))
    ):
        names.add(ref)
        # A charge's case is ``cob:{txid}``; its items carry the txid alone.
        if subject == "charge" and ":" in ref:
            names.add(ref.split(":", 1)[1])
    ordered = sorted(names)
    for start in range(0, len(ordered), DEFAULT_BATCH):
        chunk = ordered[start : start + DEFAULT_BATCH]
        held.update(
            int(item_id)
            for (item_id,) in session.execute(select(refs.c.item_id).where(refs.c.ref.in_(chunk)))
        )
    return held


# --- one prune ----------------------------------------------------------------------------


class _Run:
    def __init__(
        self, engine: Engine, report: PruneReport, batch: int, on_progress: Progress
    ) -> None:
        self.engine = engine
        self.report = report
        self.batch = batch
        self.on_progress = on_progress
        self.case_held: set[int] = set()
        self.case_kept: set[int] = set()

    def release_day(self, day: date) -> None:
        start, end = business_day_bounds(day)
        end = min(end, self.report.cutoff)
        with session_scope(self.engine) as session:
            # Asked once per day: cases change by a person's hand, days by the thousand.
            self.case_held = _case_held_items(session)
        touched = False
        for status in FINAL:
            cursor: tuple[datetime, int] | None = None
            while True:
                with session_scope(self.engine) as session:
                    if not _still_released(session, day):
                        return
                    rows = self._next_items(session, status, start, end, cursor)
                    if not rows:
                        break
                    cursor = (rows[-1][1], rows[-1][0])
                    done = self._release(session, rows)
                touched = touched or done > 0
                self.on_progress(f"items of {day.isoformat()}", done)
        if touched:
            self.report.days.append(day)

    def _next_items(
        self,
        session: Session,
        status: str,
        start: datetime,
        end: datetime,
        cursor: tuple[datetime, int] | None,
    ) -> list[tuple[int, datetime, int | None]]:
        inbox = table_of(InboxItem)
        # Walks the (status, received_at) index in order; the cursor, not an offset, so a
        # batch costs the same however far into the day it is.
        stmt = select(inbox.c.id, inbox.c.received_at, inbox.c.delivery_id).where(
            inbox.c.status == status,
            inbox.c.received_at >= (cursor[0] if cursor else start),
            inbox.c.received_at < end,
            inbox.c.payload != PRUNED_PAYLOAD,
        )
        if cursor is not None:
            stmt = stmt.where(not_(and_(inbox.c.received_at == cursor[0], inbox.c.id <= cursor[1])))
        stmt = stmt.order_by(inbox.c.received_at, inbox.c.id).limit(self.batch)
        return [(int(i), r, d) for i, r, d in session.execute(stmt)]

    def _release(self, session: Session, rows: Sequence[tuple[int, datetime, int | None]]) -> int:
        """Delete or empty one batch of items, mask their results and empty the bodies of
        the deliveries that carried nothing else still kept raw."""
        ids = [item_id for item_id, _, _ in rows if item_id not in self.case_held]
        self.case_kept.update(item_id for item_id, _, _ in rows if item_id in self.case_held)
        if not ids:
            return 0
        referenced = _referenced(session, ids)
        gone = [item_id for item_id in ids if item_id not in referenced]
        emptied = [item_id for item_id in ids if item_id in referenced]
        deliveries = _deliveries_to_empty(
            session, ids, {d for _, _, d in rows if d is not None}, self.report.cutoff
        )
        dry = self.report.dry_run
        report = self.report
        for model in RESULT_TABLES:
            changed = _mask_results(session, model, emptied, dry)
            if changed:
                report.masked[table_of(model).name] += changed
        inbox, refs, links = table_of(InboxItem), table_of(InboxRef), table_of(DeliveryItem)
        if gone:
            report.deleted[refs.name] += _count_or_delete(session, refs, refs.c.item_id, gone, dry)
            report.deleted[links.name] += _count_or_delete(
                session, links, links.c.item_id, gone, dry
            )
            report.deleted[inbox.name] += _count_or_delete(session, inbox, inbox.c.id, gone, dry)
        if emptied:
            if not dry:
                session.execute(
                    update(inbox).where(inbox.c.id.in_(emptied)).values(payload=PRUNED_PAYLOAD)
                )
            report.raw_removed[inbox.name] += len(emptied)
        if deliveries:
            table = table_of(WebhookDelivery)
            if not dry:
                session.execute(update(table).where(table.c.id.in_(deliveries)).values(body=b""))
            report.raw_removed[table.name] += len(deliveries)
        return len(ids)

    def quarantine(self) -> None:
        """Refused deliveries are nobody's business day: the period alone decides."""
        table = table_of(QuarantinedDelivery)
        cursor = 0
        while True:
            with session_scope(self.engine) as session:
                ids = [
                    int(i)
                    for (i,) in session.execute(
                        select(table.c.id)
                        .where(table.c.received_at < self.report.cutoff, table.c.id > cursor)
                        .order_by(table.c.id)
                        .limit(self.batch)
                    )
                ]
                if not ids:
                    return
                cursor = ids[-1]
                self.report.deleted[table.name] += _count_or_delete(
                    session, table, table.c.id, ids, self.report.dry_run
                )
            self.on_progress("refused deliveries", len(ids))

    def count_kept(self) -> None:
        """Why old items are still whole: one count per reason, for the operator."""
        inbox, unread = table_of(InboxItem), table_of(UnreadItem)
        cutoff = self.report.cutoff
        with session_scope(self.engine) as session:
            # Whole window past the period: what it may have left out is of old days.
            unread_old = session.execute(
                select(func.count()).where(unread.c.at_until < cutoff)
            ).scalar_one()
            waiting = session.execute(
                select(func.count()).where(
                    inbox.c.status.in_(NEEDS_A_PERSON), inbox.c.received_at < cutoff
                )
            ).scalar_one()
            raw_final = session.execute(
                select(func.count()).where(
                    inbox.c.status.in_(FINAL),
                    inbox.c.received_at < cutoff,
                    inbox.c.payload != PRUNED_PAYLOAD,
                )
            ).scalar_one()
        # A dry run left in place what it counted as released.
        released = (
            self.report.deleted[inbox.name] + self.report.raw_removed[inbox.name]
            if self.report.dry_run
            else 0
        )
        self.report.kept["needs_a_person"] = int(waiting)
        self.report.kept["open_exception"] = len(self.case_kept)
        self.report.kept["unread"] = int(unread_old)
        self.report.kept["day_not_reconciled"] = max(
            int(raw_final) - len(self.case_kept) - released, 0
        )


def _referenced(session: Session, ids: Sequence[int]) -> set[int]:
    found: set[int] = set()
    for model in RESULT_TABLES:
        table = table_of(model)
        found.update(
            int(item_id)
            for (item_id,) in session.execute(
                select(table.c.inbox_item_id).where(table.c.inbox_item_id.in_(ids)).distinct()
            )
        )
    return found


def _deliveries_to_empty(
    session: Session, ids: Sequence[int], first: Iterable[int], cutoff: datetime
) -> list[int]:
    """The deliveries that carried these items (first or again) whose every other item
    has lost its raw payload too: their body holds nothing anyone still needs."""
    deliveries, inbox, links = (
        table_of(WebhookDelivery),
        table_of(InboxItem),
        table_of(DeliveryItem),
    )
    wanted = set(first)
    wanted.update(
        int(d)
        for (d,) in session.execute(
            select(links.c.delivery_id).where(links.c.item_id.in_(ids)).distinct()
        )
    )
    if not wanted:
        return []
    candidates = {
        int(d): as_utc(at)
        for d, at in session.execute(
            select(deliveries.c.id, deliveries.c.received_at).where(
                deliveries.c.id.in_(sorted(wanted)),
                deliveries.c.received_at < cutoff,
                func.length(deliveries.c.body) > 0,
            )
        )
    }
    if not candidates:
        return []
    chosen = sorted(candidates)
    still_raw = and_(inbox.c.payload != PRUNED_PAYLOAD, inbox.c.id.not_in(ids))
    # A delivery's first items share its received_at (one insert, one clock reading):
    # asking by status and time lets the (status, received_at) index answer.
    held = {
        int(d)
        for (d,) in session.execute(
            select(inbox.c.delivery_id).where(
                inbox.c.status.in_([s.value for s in ItemStatus]),
                inbox.c.received_at.in_(sorted(set(candidates.values()))),
                inbox.c.delivery_id.in_(chosen),
                still_raw,
            )
        )
    }
    held.update(
        int(d)
        for (d,) in session.execute(
            select(links.c.delivery_id)
            .join(inbox, inbox.c.id == links.c.item_id)
            .where(links.c.delivery_id.in_(chosen), still_raw)
        )
    )
    return [d for d in chosen if d not in held]


def _mask_results(session: Session, model: type[SQLModel], items: Sequence[int], dry: bool) -> int:
    columns = PERSONAL_COLUMNS.get(model)
    if not columns or not items:
        return 0
    table = table_of(model)
    personal = [table.c[name] for name in columns]
    stmt = select(table.c.id, *personal).where(
        table.c.inbox_item_id.in_(items), or_(*(c.is_not(None) for c in personal))
    )
    changes: list[dict[str, Any]] = []
    for row in session.execute(stmt):
        values = dict(zip(columns, row[1:], strict=True))
        masked = {name: mask_column(kind, values[name]) for name, kind in columns.items()}
        if masked != values:
            changes.append({"id": row[0], **masked})
    if changes and not dry:
        _update_by_id(session, table, changes)
    return len(changes)


def _update_by_id(session: Session, table: Table, rows: list[dict[str, Any]]) -> None:
    names = [name for name in rows[0] if name != "id"]
    stmt = (
        update(table)
        .where(table.c.id == bindparam("row_id"))
        .values({name: bindparam(f"new_{name}") for name in names})
    )
    session.connection().execute(
        stmt,
        [{"row_id": row["id"], **{f"new_{name}": row[name] for name in names}} for row in rows],
    )


def _count_or_delete(
    session: Session, table: Table, column: Any, ids: Sequence[int], dry: bool
) -> int:
    if dry:
        found = session.execute(
            select(func.count()).select_from(table).where(column.in_(ids))
        ).scalar_one()
        return int(found)
    done: CursorResult[Any] = session.execute(delete(table).where(column.in_(ids)))  # type: ignore[assignment]
    return int(done.rowcount)
