"""Writing verdicts: the first rule that holds decides an item's status, whether a person
must look at it, and the reason given."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    ColumnElement,
    Integer,
    String,
    case,
    insert,
    literal,
    select,
)
from sqlalchemy.sql import FromClause
from sqlmodel import Session

from reconcile.db import table_of
from reconcile.matching.context import RunContext
from reconcile.models import ReconciliationItem

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
    "priority",
    "duplicate_webhooks",
)
# Every exception starts at priority 2; money near its refund deadline is raised to 1
# afterwards (``reconcile.matching.judgement``).
EXCEPTION_PRIORITY = 2


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
) -> None:
    """First verdict that holds wins; otherwise ``default_status``. ``where`` keeps the
    rows that belong to the day; ``carried`` says ``in``/``out`` for a movement matched
    across midnight; ``net`` is a Pix's value less its settled refunds; ``webhooks`` how
    many webhooks the item's inbox item counted (the repeats are kept with the verdict, so
    that the report counts them without joining the inbox again)."""
    status = case(
        *[(cond, literal(name, String)) for cond, name, _, _ in verdicts],
        else_=literal(default_status, String),
    )
    exception = case(
        *[(cond, literal(flag, Boolean)) for cond, _, flag, _ in verdicts],
        else_=literal(False, Boolean),
    )
    reason = case(
        *[(cond, literal(text, String)) for cond, _, _, text in verdicts],
        else_=literal(otherwise, String),
    )
    rows = select(
        literal(ctx.run_id, Integer),
        literal(subject, String),
        ref,
        status,
        exception,
        reason,
        expected,
        actual,
        source,
        inbox_item_id,
        statement_id,
        carried if carried is not None else literal(None, String),
        net if net is not None else literal(None, BigInteger),
        case((exception, literal(EXCEPTION_PRIORITY, Integer)), else_=literal(None, Integer)),
        (
            literal(None, Integer)
            if webhooks is None
            else case((webhooks > 1, webhooks - 1), else_=literal(None, Integer))
        ),
    ).select_from(joined)
    if where is not None:
        rows = rows.where(where)
    # Rows arrive in key order, so the unique index on (run_id, subject, ref) grows at
    # its end instead of splitting pages all over: the biggest cost of a million-row day.
    rows = rows.order_by(ref)
    session.execute(insert(table_of(ReconciliationItem)).from_select(COLUMNS, rows))
