"""The day's verdict, and what a person needs to act on each item: when a pending item
becomes a break, and the last day money received can still be refunded.

``reconciled``: every source was read and agrees, residual 0. ``reconciled_with_pending``:
only items inside their grace period remain, each with the instant it becomes a break.
``breaks``: exceptions remain. ``incomplete``: a source could not be read (no provider
configured or reachable, no statement for the day, a job that failed) — nothing is
claimed then."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy import ColumnElement, String, Table, bindparam, func, literal, select, update
from sqlmodel import Session

from reconcile.db import table_of
from reconcile.formats import br_date
from reconcile.matching.context import RunContext
from reconcile.matching.movements import pix_time, refund_time
from reconcile.matching.payouts import payout_time
from reconcile.matching.verdicts import refund_priority
from reconcile.models import (
    AccountMovement,
    Confirmation,
    ExpectedPayment,
    Infraction,
    PixReceived,
    PixRefund,
    ReconciliationItem,
    Recurrence,
    RecurringCharge,
)
from reconcile.timeutil import BUSINESS_TZ, as_utc
from reconcile.unread import unread_on

# How many pending items and carried items the report lists one by one (the rest are
# counted; every one of them is a row in ``reconciliation_item``).
LISTED = 1000


def is_pending(items: Table) -> ColumnElement[bool]:
    """A run's pending items, found through their own index (migration 0020). The status
    is written into the SQL, not bound: a prepared statement's generic plan cannot tell a
    bound value matches the index's predicate."""
    return items.c.status == literal("pending", String, literal_execute=True)


class DayVerdict(StrEnum):
    RECONCILED = "reconciled"
    RECONCILED_WITH_PENDING = "reconciled_with_pending"
    BREAKS = "breaks"
    INCOMPLETE = "incomplete"

    @property
    def exit_code(self) -> int:
        """0 reconciled; 1 something remains to look at; 2 the day could not be judged."""
        return {
            DayVerdict.RECONCILED: 0,
            DayVerdict.RECONCILED_WITH_PENDING: 1,
            DayVerdict.BREAKS: 1,
            DayVerdict.INCOMPLETE: 2,
        }[self]


@dataclass(frozen=True)
class Sources:
    """What could be read for the day."""

    qrcode: bool = True
    """The QR code API is configured (Pix received, their refunds, charges)."""
    accounts: bool = True
    """The accounts API is configured (statement, balance, payouts, infractions)."""
    confirm_policy: str = "api"
    problems: tuple[str, ...] = ()
    """Sources that failed while fetching the day, in words."""
    statement_read: bool = True
    """The statement was read over the day (fetched for this run, or polled up to its
    judging time). A day with no statement line is quiet only if it was: otherwise
    nothing says whether the provider booked anything."""


def annotate_pending(session: Session, ctx: RunContext) -> None:
    """``due_at`` of each pending item: when it becomes a break if nothing changes — the
    end of its grace period for a look-up, the end of the date lag for a statement line.
    Items waiting for the provider itself (processing) have none."""
    items = table_of(ReconciliationItem)
    session.execute(
        update(items)
        .where(
            items.c.run_id == ctx.run_id,
            is_pending(items),
            items.c.reason == "not in the statement yet",
        )
        .values(due_at=ctx.statement_end)
    )
    if ctx.as_of >= ctx.end:
        # The day is over and judged at its end: a look-up still inside its grace period
        # then (notified late in the day, or after it) stays pending in every later run of
        # the day until the provider answers, so no time can be promised for the break.
        return
    grace = ctx.judging.grace
    for model, stamp in (
        (PixReceived, "created_at"),
        (PixRefund, "updated_at"),
        (AccountMovement, "updated_at"),
        (Infraction, "updated_at"),
        (Recurrence, "updated_at"),
        (RecurringCharge, "updated_at"),
    ):
        source = table_of(model)
        rows = session.execute(
            select(items.c.id, source.c[stamp])
            .join(source, source.c.inbox_item_id == items.c.inbox_item_id)
            .where(
                items.c.run_id == ctx.run_id,
                is_pending(items),
                items.c.due_at.is_(None),
                source.c.confirmation == Confirmation.PENDING.value,
            )
        ).all()
        if rows:
            # One statement for all of them, not one per pending item.
            session.execute(
                update(items)
                .where(items.c.id == bindparam("item_id"))
                .values(due_at=bindparam("new_due_at")),
                [{"item_id": i, "new_due_at": as_utc(since) + grace} for i, since in rows],
            )


def annotate_priorities(session: Session, ctx: RunContext) -> None:
    """A charge paid more than due, or twice, carries the last day a refund is possible
    (the day of the Pix to give back + the refund window: the one that paid it for one
    overpaid, the second for one paid twice), and comes first (priority 1) when that day
    is near; every other exception keeps the priority it was written with (a Pix received
    that may go back got its deadline with its verdict)."""
    items = table_of(ReconciliationItem)
    P, E = table_of(PixReceived), table_of(ExpectedPayment)
    paid_at = func.coalesce(P.c.horario, P.c.created_at)
    # The Pix the charge's verdict counted: those the API stands behind, by the day's end.
    payments = session.execute(
        select(items.c.id, items.c.status, paid_at)
        .join(E, E.c.kind + literal(":", String) + E.c.ref == items.c.ref)
        .join(P, P.c.txid == E.c.txid)
        .where(
            items.c.run_id == ctx.run_id,
            items.c.subject == "charge",
            items.c.status.in_(("overpaid", "paid_twice")),
            # Paid twice in parts that add up to no more than was due: nothing goes back.
            items.c.actual_cents > items.c.expected_cents,
            P.c.confirmation.in_(Confirmation.stated()),
            paid_at < ctx.end,
        )
    ).all()
    paid: dict[int, list[date]] = defaultdict(list)
    twice: set[int] = set()
    for item_id, status, when in payments:
        paid[item_id].append(as_utc(when).astimezone(BUSINESS_TZ).date())
        if status == "paid_twice":
            twice.add(item_id)
    # One statement per deadline, not per charge: a bad day has thousands of them.
    by_deadline: dict[date, list[int]] = defaultdict(list)
    for item_id, days in paid.items():
        days.sort()
        paid_on = days[1] if item_id in twice and len(days) > 1 else days[0]
        by_deadline[paid_on + timedelta(days=ctx.judging.refund_days)].append(item_id)
    for deadline, ids in by_deadline.items():
        for at in range(0, len(ids), 1000):
            _set_deadline(session, ctx, deadline, items.c.id.in_(ids[at : at + 1000]))


def _set_deadline(session: Session, ctx: RunContext, deadline: date, *where: Any) -> None:
    items = table_of(ReconciliationItem)
    session.execute(
        update(items)
        .where(items.c.run_id == ctx.run_id, items.c.exception, *where)
        .values(refund_by=deadline, priority=refund_priority(ctx, deadline))
    )


def pending_items(session: Session, ctx: RunContext) -> list[dict[str, Any]]:
    items = table_of(ReconciliationItem)
    # No ORDER BY in SQL: with a LIMIT, PostgreSQL would walk the run's whole unique index
    # in (subject, ref) order to find the few pending rows. Few rows: sorted here.
    rows = sorted(
        session.execute(
            select(
                items.c.subject,
                items.c.ref,
                items.c.reason,
                # A charge waiting for its payment has no actual amount yet: what is due.
                func.coalesce(items.c.actual_cents, items.c.expected_cents),
                items.c.due_at,
            )
            .where(items.c.run_id == ctx.run_id, is_pending(items))
            .limit(LISTED)
        ).all(),
        key=lambda row: (row[4] is None, row[4] or ctx.end, row[0], row[1]),
    )
    return [
        {
            "subject": subject,
            "ref": ref,
            "reason": reason,
            "amount_cents": amount,
            "due_at": as_utc(due).isoformat() if due is not None else None,
        }
        for subject, ref, reason, amount, due in rows
    ]


def carried_items(session: Session, ctx: RunContext, direction: str) -> list[dict[str, Any]]:
    items = table_of(ReconciliationItem)
    amount = items.c.expected_cents if direction == "in" else items.c.actual_cents
    rows = session.execute(
        select(items.c.subject, items.c.ref, amount)
        .where(items.c.run_id == ctx.run_id, items.c.carried == direction)
        .limit(LISTED)
    ).all()
    return [{"subject": s, "ref": r, "amount_cents": a} for s, r, a in sorted(rows)]


def _claimed_at(T: Table) -> ColumnElement[datetime]:
    return T.c.status_at


def unconfirmable(session: Session, ctx: RunContext, sources: Sources) -> list[str]:
    """The day's money that waits for a look-up no configured API can make. Only the
    day's: another day's Pix waiting says nothing of this one, and counting it made a day
    judged ``reconciled`` turn ``incomplete`` once a later day brought such a Pix."""
    if sources.confirm_policy == "none":
        return []
    waiting = []
    for model, api, what, when in (
        (PixReceived, sources.qrcode, "Pix received", pix_time),
        (PixRefund, sources.qrcode, "refunds", refund_time),
        (AccountMovement, sources.accounts, "account movements", payout_time),
        (Recurrence, sources.qrcode, "recurrences notified", _claimed_at),
        (RecurringCharge, sources.qrcode, "recurring charges notified", _claimed_at),
    ):
        if api:
            continue
        table = table_of(model)
        # A recurrence's state claimed by the day's end decides its cycles there, whenever
        # it was claimed; a movement is the day's own when it happened in the day.
        claim = when is _claimed_at
        in_scope = when(table) < ctx.end if claim else ctx.within(when(table))
        n = session.execute(
            select(func.count()).where(table.c.confirmation == Confirmation.PENDING.value, in_scope)
        ).scalar_one()
        if n:
            family = "QR code" if model is not AccountMovement else "accounts"
            waiting.append(
                f"{n} {what} wait for confirmation, but the {family} API is not configured "
                "(configure it, or set PIXRECON_CONFIRM_POLICY=none to trust webhooks)"
            )
    return waiting


def incomplete_because(
    session: Session,
    ctx: RunContext,
    sources: Sources,
    has_items: bool,
    *,
    balance_known: bool = True,
) -> list[str]:
    reasons = list(sources.problems)
    if not sources.qrcode and not sources.accounts:
        reasons.append("no provider API is configured: nothing was checked against it")
    elif not sources.accounts:
        reasons.append(
            "the accounts API is not configured: no statement or balance to check against"
        )
    elif has_items and not ctx.statement_known:
        reasons.append("the provider's statement has no lines for the day")
    elif not ctx.statement_known and not sources.statement_read:
        reasons.append(
            "the provider's statement was not read for the day and none of its lines is "
            "stored: nothing says whether money moved (run `pixrecon reconcile` without "
            "--no-poll, or see why the accounts poll fails)"
        )
    if sources.accounts and not reasons and not balance_known:
        # The bridge cannot close: "adds up" would be a claim nothing backs.
        reasons.append(
            f"no balance is known for {br_date(ctx.day)}: no balance reading and no statement "
            "line up to the day's end says what the account held, so its bridge from "
            "opening to closing balance cannot be closed (poll the balance with `pixrecon "
            "poll`; a day before the statement's first line has none)"
        )
    # Whichever read skipped them (a periodic poll, or a fetch of this or another day):
    # what they left out is in no total, and the lines read close the bridge without it.
    reasons.extend(unread_on(session, ctx.day, ctx.start, ctx.end, ctx.statement_end))
    reasons.extend(unconfirmable(session, ctx, sources))
    return reasons


def judge(
    *,
    incomplete: list[str],
    exceptions: int,
    residual: int | None,
    pending: int,
) -> DayVerdict:
    if incomplete:
        return DayVerdict.INCOMPLETE
    if exceptions or residual not in (0, None):
        return DayVerdict.BREAKS
    if pending:
        return DayVerdict.RECONCILED_WITH_PENDING
    return DayVerdict.RECONCILED
