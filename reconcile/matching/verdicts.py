"""Writing verdicts: the first rule that holds decides an item's status, whether a person
must look at it, and the reason given."""

from __future__ import annotations

from collections.abc import Collection
from datetime import date

from sqlalchemy import (
    BigInteger,
    Boolean,
    ColumnElement,
    Date,
    Integer,
    String,
    and_,
    case,
    cast,
    func,
    insert,
    literal,
    null,
    or_,
    select,
)
from sqlalchemy.sql import FromClause
from sqlmodel import Session

from reconcile.db import table_of
from reconcile.matching.context import RunContext
from reconcile.models import DeliveryItem, InboxItem, ReconciliationItem, WebhookDelivery
from reconcile.priorities import EXCEPTION_PRIORITY, URGENT_PRIORITY
from reconcile.priorities import refund_priority as priority_of_refund

Verdict = tuple[ColumnElement[bool], str, bool, str]
"""(condition, status, is an exception, reason)"""

COLUMNS = (
    "run_id",
    "subject",
    "ref",
    "status",
    "exception",
    "reason",
    "expected_cents",
    "actual_cents",
    "source",
    "inbox_item_id",
    "statement_entry_id",
    "carried",
    "net_cents",
    "refund_by",
    "priority",
    "duplicate_webhooks",
)


def _late(ctx: RunContext, row: FromClause) -> ColumnElement[int]:
    """The repeats of a row's item delivered after the day it is judged as of, when its
    first delivery came by then: a later day's re-notification (a Pix sent again with its
    refund) is no repeat of this day's, or the day's count would grow with the day it is
    asked. A day whose deliveries all came after it (played or loaded later) counts them
    all, as there is no telling its own repeats apart. Looked up for repeated items only,
    by the links each later delivery left (``delivery_item``)."""
    links, deliveries = table_of(DeliveryItem), table_of(WebhookDelivery)
    items = table_of(InboxItem)
    # Joined rather than tested with EXISTS: one level of nesting fewer, which SQLite's
    # parser needs in the movements' statement.
    return (
        select(func.count())
        .select_from(
            links.join(deliveries, deliveries.c.id == links.c.delivery_id).join(
                items, items.c.id == links.c.item_id
            )
        )
        .where(
            links.c.item_id == row.c.inbox_item_id,
            deliveries.c.received_at >= ctx.as_of,
            items.c.received_at < ctx.as_of,
        )
        .scalar_subquery()
    )


def refund_priority(ctx: RunContext, deadline: date) -> int:
    """Money that may have to go back comes first when its last day is near the day judged."""
    return priority_of_refund(deadline, ctx.today, ctx.judging.refund_warning_days)


# The status whose money may go back only as far as more arrived than was notified.
OVER_AMOUNT = "amount_mismatch"

# The exceptions whose money only a notification stated: a movement the provider's API does
# not stand behind, a payout it does not know. The notified amount is then what was
# expected, and ``actual`` only what a statement line booked of it (NULL when none did), so
# that a sum of ``actual`` is money that moved (docs/exports.md).
NOTIFIED_ONLY = frozenset({"unconfirmed_webhook", "unknown_to_provider"})


def insert_verdicts(
    session: Session,
    ctx: RunContext,
    subject: str,
    ref: ColumnElement[str],
    joined: FromClause,
    verdicts: list[Verdict],
    otherwise: str,
    *,
    default_status: str = "matched",
    expected: ColumnElement[int],
    actual: ColumnElement[int],
    source: ColumnElement[str],
    inbox_item_id: ColumnElement[int],
    statement_id: ColumnElement[int],
    where: ColumnElement[bool] | None = None,
    carried: ColumnElement[str] | None = None,
    net: ColumnElement[int] | None = None,
    webhooks: ColumnElement[int] | None = None,
    refundable: Collection[str] = (),
    urgent: ColumnElement[bool] | None = None,
    notified: ColumnElement[int] | None = None,
    booked: ColumnElement[int] | None = None,
) -> None:
    """First verdict that holds wins; otherwise ``default_status``. ``where`` keeps the
    rows that belong to the day; ``carried`` says ``in``/``out`` for a movement matched
    across midnight; ``net`` is a Pix's value less its settled refunds; ``webhooks`` how
    many webhooks the item's inbox item counted (the repeats are kept with the verdict, so
    that the report counts them without joining the inbox again). An exception whose
    status is ``refundable`` and whose money the statement booked may have to be returned:
    it carries the last day it can be (``ctx.refund_by``), written with the row rather than
    updated afterwards, which on a bad day rewrote tens of thousands of rows. An exception
    for which ``urgent`` holds comes first (priority 1) whatever its status. An exception
    whose status is one of ``NOTIFIED_ONLY`` carries ``notified`` (what the notification
    stated) as its expected amount and ``booked`` (what a statement line booked of it, NULL
    when none did) as its actual one, in place of ``expected`` and ``actual``."""
    # The first rule that holds is found once per row, as a number, below the sort; the
    # status, flag, reason and priority are then read from that number. Written as four
    # CASEs over the rules, PostgreSQL would test every rule four times for every
    # agreeing item (no rule holds for those), most of a million-row day's projection.
    chosen = case(
        *[(cond, literal(n, Integer)) for n, (cond, _, _, _) in enumerate(verdicts)],
        else_=literal(len(verdicts), Integer),
    ).label("verdict")
    picked = (
        select(
            ref.label("ref"),
            chosen,
            # Typed here: a bare NULL a matcher passes would leave the subquery as text.
            cast(expected, BigInteger).label("expected"),
            cast(actual, BigInteger).label("actual"),
            cast(source, String).label("source"),
            cast(inbox_item_id, BigInteger).label("inbox_item_id"),
            cast(statement_id, BigInteger).label("statement_id"),
            cast(carried if carried is not None else null(), String).label("carried"),
            cast(net if net is not None else null(), BigInteger).label("net"),
            cast(webhooks if webhooks is not None else null(), Integer).label("webhooks"),
            # Only the matchers that pass it pay for the column (not the Pix received's).
            *([cast(urgent, Boolean).label("urgent")] if urgent is not None else []),
            *(
                [
                    cast(notified, BigInteger).label("notified"),
                    cast(booked, BigInteger).label("booked"),
                ]
                if notified is not None and booked is not None
                else []
            ),
        )
        .select_from(joined)
        # Rows arrive in key order, so the unique index on (run_id, subject, ref) grows at
        # its end instead of splitting pages all over: the biggest cost of a million-row
        # day. The ORDER BY also keeps PostgreSQL from pulling this query up into the
        # INSERT's, which would copy the rules back into every CASE below.
        .order_by(ref)
    )
    if where is not None:
        picked = picked.where(where)
    row = picked.subquery("verdict")

    def by_verdict(
        values: list[ColumnElement[object]], otherwise: ColumnElement[object]
    ) -> ColumnElement[object]:
        return case(dict(enumerate(values)), value=row.c.verdict, else_=otherwise)

    exception = row.c.verdict.in_([n for n, (_, _, flag, _) in enumerate(verdicts) if flag])
    priority: ColumnElement[int] = case(
        (exception, literal(EXCEPTION_PRIORITY, Integer)), else_=literal(None, Integer)
    )
    refund_by: ColumnElement[date] = literal(None, Date)
    refunds = [n for n, (_, name, flag, _) in enumerate(verdicts) if flag and name in refundable]
    if refunds:
        # Of another amount than notified, only what arrived over it may go back: a Pix
        # notified for more than the provider states brought nothing to return.
        over = [n for n in refunds if verdicts[n][1] == OVER_AMOUNT]
        returnable: ColumnElement[bool] = row.c.verdict.in_([n for n in refunds if n not in over])
        if over:
            returnable = or_(
                returnable, and_(row.c.verdict.in_(over), row.c.expected > row.c.actual)
            )
        to_return = and_(returnable, row.c.statement_id.is_not(None))
        refund_by = case((to_return, literal(ctx.refund_by, Date)), else_=refund_by)
        urgency = literal(refund_priority(ctx, ctx.refund_by), Integer)
        priority = case((to_return, urgency), else_=priority)
    expected_cents: ColumnElement[int] = row.c.expected
    actual_cents: ColumnElement[int] = row.c.actual
    only_notified = [
        n for n, (_, name, flag, _) in enumerate(verdicts) if flag and name in NOTIFIED_ONLY
    ]
    if notified is not None and booked is not None and only_notified:
        # Decided by the rule that held, not by restating its condition: an earlier rule
        # may have taken the row.
        stated = row.c.verdict.in_(only_notified)
        expected_cents = case((stated, row.c.notified), else_=row.c.expected)
        actual_cents = case((stated, row.c.booked), else_=row.c.actual)
    if urgent is not None:
        priority = case(
            (and_(exception, row.c.urgent), literal(URGENT_PRIORITY, Integer)), else_=priority
        )
    rows = select(
        literal(ctx.run_id, Integer),
        literal(subject, String),
        row.c.ref,
        by_verdict(
            [literal(name, String) for _, name, _, _ in verdicts], literal(default_status, String)
        ),
        exception,
        by_verdict(
            [literal(text, String) for _, _, _, text in verdicts], literal(otherwise, String)
        ),
        expected_cents,
        actual_cents,
        row.c.source,
        row.c.inbox_item_id,
        row.c.statement_id,
        row.c.carried,
        row.c.net,
        refund_by,
        priority,
        case(
            (row.c.webhooks > 1, func.nullif(row.c.webhooks - 1 - _late(ctx, row), 0)),
            else_=literal(None, Integer),
        ),
    ).select_from(row)
    session.execute(insert(table_of(ReconciliationItem)).from_select(COLUMNS, rows))
