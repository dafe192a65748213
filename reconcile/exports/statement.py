"""The day's statement: ``statement_entry`` rows booked in the business day, as the lines a
bank statement shows, and the balance they end at.

A line's ``amount_cents`` is signed (credits positive) and is what the line did to the
balance, so the lines of a day add up to its balance change. An entry from which the
provider netted a fee (``fee_cents``: its ``amount_cents`` is then what reached the
account, see ``reconcile/payloads/statement.py``) becomes two lines: the movement at its
gross value (amount + fee) and the fee (``FEE``, negative). An entry whose category is a
fee is a ``FEE`` line itself.

Each line has a ``key`` (``stmt:{entry_id}``; ``stmt:{entry_id}:fee`` for a netted fee)
and a ``fitid``, the id an OFX importer posts once: the entry's endToEndId when the entry
is that movement (a Pix received, a refund sent, a payout or its return), else the
provider's ``entry_id`` — a fee or MED debit line carries the endToEndId of another
movement, so a fee line is ``{endToEndId}:fee`` and a MED debit its ``entry_id``. A FITID
that still repeats within the day (the provider booked a movement twice) is made
``{fitid}:{entry_id}`` from its second line on, so no line is lost to an importer."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sqlalchemy import ColumnElement, Engine, Select, String, and_, case, func, literal, or_, select
from sqlalchemy.sql import FromClause

from reconcile.db import session_scope, table_of
from reconcile.exports.runs import latest_completed_run
from reconcile.exports.table import CHUNK, BalanceUnknown, NotReconciled, Row, Table
from reconcile.formats import br_date
from reconcile.matching.context import (
    FEE,
    INFRACTION_DEBIT,
    PAYOUT,
    PAYOUT_REFUND,
    RECEIVED,
    REFUND_SENT,
    RunContext,
)
from reconcile.matching.totals import balance_after, balance_before, balance_drift, chain_order
from reconcile.models import StatementEntry
from reconcile.timeutil import as_utc, business_day_bounds, utcnow

# Categories whose entry is the movement its endToEndId names.
OWN_END_TO_END = RECEIVED + REFUND_SENT + PAYOUT + PAYOUT_REFUND
LABELS = {
    **dict.fromkeys(RECEIVED, "Pix received"),
    **dict.fromkeys(REFUND_SENT, "refund sent"),
    **dict.fromkeys(PAYOUT, "payout"),
    **dict.fromkeys(PAYOUT_REFUND, "payout return"),
    **dict.fromkeys(INFRACTION_DEBIT, "MED debit"),
    **dict.fromkeys(FEE, "fee"),
}
CREDIT, DEBIT, FEE_LINE = "CREDIT", "DEBIT", "FEE"
STATEMENT_COLUMNS = (
    "key",
    "date",
    "booked_at",
    "entry_id",
    "fitid",
    "trntype",
    "description",
    "category",
    "amount_cents",
    "balance_after_cents",
    "end_to_end_id",
    "original_end_to_end_id",
    "idempotency_key",
    "txid",
    "infraction_id",
)


@dataclass(frozen=True)
class StatementLine:
    key: str
    day: date
    booked_at: datetime
    entry_id: str
    fitid: str
    trntype: str
    """``CREDIT``, ``DEBIT`` or ``FEE``."""
    description: str
    category: str | None
    amount_cents: int
    """Signed: what this line did to the balance."""
    balance_after_cents: int | None
    """The provider's running balance after the entry (on its last line only)."""
    end_to_end_id: str | None
    original_end_to_end_id: str | None
    idempotency_key: str | None
    txid: str | None
    infraction_id: str | None

    def row(self) -> Row:
        return {
            column: self.day if column == "date" else getattr(self, column)
            for column in STATEMENT_COLUMNS
        }


@dataclass(frozen=True)
class DayBalance:
    opening_cents: int | None
    closing_cents: int
    as_of: datetime


def _fitid(S: FromClause) -> ColumnElement[str]:
    e2e, entry = S.c.end_to_end_id, S.c.entry_id
    return case(
        (S.c.category.in_(FEE), func.coalesce(e2e + literal(":fee", String), entry)),
        (or_(S.c.category.is_(None), S.c.category.in_(OWN_END_TO_END)), func.coalesce(e2e, entry)),
        else_=entry,
    )


def _of_day(day: date) -> ColumnElement[bool]:
    S = table_of(StatementEntry)
    start, end = business_day_bounds(day)
    return and_(S.c.booked_at >= start, S.c.booked_at < end)


def _repeated(engine: Engine, day: date) -> set[str]:
    """Entries whose FITID an earlier line of the day already has (normally none)."""
    S = table_of(StatementEntry)
    ranked = (
        select(
            S.c.entry_id,
            func.row_number()
            .over(partition_by=_fitid(S), order_by=(S.c.booked_at, S.c.id))
            .label("nth"),
        )
        .where(_of_day(day))
        .subquery()
    )
    with session_scope(engine) as session:
        return set(session.execute(select(ranked.c.entry_id).where(ranked.c.nth > 1)).scalars())


def _chunk(day: date, after: tuple[datetime, int] | None) -> Select[Any]:
    S = table_of(StatementEntry)
    stmt = select(S, _fitid(S).label("fitid")).where(_of_day(day))
    if after is not None:
        at, last_id = after
        stmt = stmt.where(or_(S.c.booked_at > at, and_(S.c.booked_at == at, S.c.id > last_id)))
    return stmt.order_by(S.c.booked_at, S.c.id).limit(CHUNK)


def _lines_of(day: date, entry: Any, repeated: bool) -> list[StatementLine]:
    signed = entry.amount_cents if entry.type == CREDIT else -entry.amount_cents
    fitid = f"{entry.fitid}:{entry.entry_id}" if repeated else entry.fitid
    is_fee = entry.category in FEE
    fee = 0 if is_fee else int(entry.fee_cents or 0)
    common: dict[str, Any] = {
        "day": day,
        "booked_at": as_utc(entry.booked_at),
        "entry_id": entry.entry_id,
        "category": entry.category,
        "end_to_end_id": entry.end_to_end_id,
        "original_end_to_end_id": entry.original_end_to_end_id,
        "idempotency_key": entry.idempotency_key,
        "txid": entry.txid,
        "infraction_id": entry.infraction_id,
    }
    main = StatementLine(
        key=f"stmt:{entry.entry_id}",
        fitid=fitid,
        trntype=FEE_LINE if is_fee else (CREDIT if entry.type == CREDIT else DEBIT),
        description=LABELS.get(entry.category or "", entry.category or entry.type.lower()),
        # Gross, when the provider netted a fee from it: the fee is the next line.
        amount_cents=signed + fee,
        balance_after_cents=None if fee else entry.balance_after_cents,
        **common,
    )
    if not fee:
        return [main]
    netted = StatementLine(
        key=f"stmt:{entry.entry_id}:fee",
        fitid=f"{fitid}:fee",
        trntype=FEE_LINE,
        description="fee",
        amount_cents=-fee,
        balance_after_cents=entry.balance_after_cents,
        **common,
    )
    return [main, netted]


def _as_booked(group: list[Any], before: int | None) -> list[Any]:
    """Entries booked at one instant, in the order their running balances chain (a fee
    after the credit it was taken from), whichever order they were stored in; ``before``,
    the balance before them, says where a chain of amounts that cancel begins."""
    if len(group) < 2 or any(entry.balance_after_cents is None for entry in group):
        return group
    order = chain_order(
        [
            (
                int(entry.balance_after_cents),
                entry.amount_cents if entry.type == CREDIT else -entry.amount_cents,
            )
            for entry in group
        ],
        before,
    )
    return group if order is None else [group[n] for n in order]


def statement_lines(engine: Engine, day: date) -> Iterator[StatementLine]:
    """The day's lines by booking time, read in chunks of ``CHUNK`` entries; lines booked
    at the same instant in the order their running balances chain."""
    repeated = _repeated(engine, day)
    with session_scope(engine) as session:
        running = balance_before(session, business_day_bounds(day)[0])
    after: tuple[datetime, int] | None = None
    group: list[Any] = []

    def booked_in_order() -> Iterator[StatementLine]:
        nonlocal running
        for booked in _as_booked(group, running):
            yield from _lines_of(day, booked, booked.entry_id in repeated)
            running = booked.balance_after_cents

    while True:
        with session_scope(engine) as session:
            chunk = session.execute(_chunk(day, after)).all()
        for entry in chunk:
            if group and entry.booked_at != group[0].booked_at:
                yield from booked_in_order()
                group = []
            group.append(entry)
        if len(chunk) < CHUNK:
            yield from booked_in_order()
            return
        after = (chunk[-1].booked_at, chunk[-1].id)


def statement_table(engine: Engine, day: date) -> Table:
    lines = statement_lines(engine, day)
    return Table(
        name=f"statement-{day.isoformat()}",
        columns=STATEMENT_COLUMNS,
        rows=(line.row() for line in lines),
        notice=statement_notice(engine, day),
    )


def statement_notice(engine: Engine, day: date) -> str | None:
    """A day with no line stored is a day nothing moved only if its statement was read:
    a run of the day judged it (one that could not read it is ``incomplete``). Otherwise
    an empty statement would be booked as a day without movement, and its balance is only
    the nearest one known."""
    with session_scope(engine) as session:
        if session.execute(select(func.count()).where(_of_day(day))).scalar_one():
            return None
    try:
        run = latest_completed_run(engine, day)
    except NotReconciled:
        run = None
    if run is not None and run.report.get("verdict") not in (None, "incomplete"):
        return None
    return (
        f"no statement line of {br_date(day)} is stored and no completed run of the day read "
        "its statement: this file does not say that nothing moved (run `pixrecon reconcile "
        f"--date {day.isoformat()}`, or `pixrecon poll`, first)"
    )


def day_balance(engine: Engine, day: date, now: datetime | None = None) -> DayBalance:
    """The balance the day ends at: the statement's running balance after its last line
    (as ``reconcile.matching.totals`` derives it); else, when the day's lines carry no
    running balance (or there are none), the latest balance known before the day plus
    its lines. ``BalanceUnknown`` when nothing says what the balance was."""
    now = now or utcnow()
    start, end = business_day_bounds(day)
    S = table_of(StatementEntry)
    signed = case((S.c.type == CREDIT, S.c.amount_cents), else_=-S.c.amount_cents)
    with session_scope(engine) as session:
        balance = balance_drift(session, RunContext.for_day(0, day, now, statement_known=True))
        opening, closing = balance["opening_cents"], balance["closing_cents"]
        if balance["drift_cents"] is None:
            # No line of the day carries a running balance (or there is none): the
            # newest balance known before the day, and before its end, plus its lines.
            opening = balance_before(session, start)
            lines, change = session.execute(
                select(func.count(), func.coalesce(func.sum(signed), 0)).where(_of_day(day))
            ).one()
            if not lines:
                # Nothing moved: what the first balance known after the day says, when
                # nothing before it does (the account's first days).
                opening = opening if opening is not None else balance_after(session, start)
                closing = balance_before(session, end)
                closing = closing if closing is not None else opening
            elif opening is not None:
                closing = opening + int(change)
    if closing is None:
        raise BalanceUnknown(day.isoformat())
    return DayBalance(
        opening_cents=None if opening is None else int(opening),
        closing_cents=int(closing),
        as_of=min(now, end) if now >= start else start,
    )
