"""The balance drift: what the provider's statement says against its own balances."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, case, func, select
from sqlalchemy.sql import FromClause
from sqlmodel import Session

from reconcile.db import table_of
from reconcile.matching.context import RunContext
from reconcile.models import (
    BalanceSnapshot,
    StatementEntry,
)
from reconcile.timeutil import as_utc


def _cents(value: Any) -> int:
    return int(value or 0)


def _no_balance() -> int | None:
    return None


def _chain_ends(
    lines: Sequence[tuple[int, int]], before: Callable[[], int | None] = _no_balance
) -> tuple[int, int]:
    """The balance before and after a group of lines booked at the same instant.

    Lines that share a timestamp have no order we can trust: the provider applied them in
    its own order, and ours comes from whichever worker stored each first. Their running
    balances still form one chain ``opening → … → closing``: every line's balance before
    it (``after - signed``) is another line's balance after, except the chain's first; and
    every balance after is another's balance before, except the last's. Those two are the
    multiset differences.
    """
    befores = Counter(after - signed for after, signed in lines)
    afters = Counter(after for after, _ in lines)
    opening = befores - afters
    closing = afters - befores
    if opening.total() == 1 and closing.total() == 1:
        return next(iter(opening)), next(iter(closing))
    if not opening and not closing:
        # Amounts that cancel (a Pix and the fee of its whole amount) close a cycle: any
        # line could have come first, and the balance before the group (``before``, asked
        # only now) says which did. The group then ends where it began. With no balance
        # known before it, money came in before a fee could be taken from it: the cycle
        # begins with a credit.
        known = before()
        if known is None:
            known = _credit_first(lines)
        if known is not None and known in befores:
            return known, known
    # Not one chain (a line missing inside the group, or amounts that cancel): fall back to
    # the group's extremes by our own order, and let the drift show what does not add up.
    (first_after, first_signed), (last_after, _) = lines[0], lines[-1]
    return first_after - first_signed, last_after


def _credit_first(lines: Sequence[tuple[int, int]]) -> int | None:
    """Where a cycle of lines begins when nothing before it is known: at a credit (a
    fee, the usual debit of such a cycle, is booked right after the Pix it is taken
    from); ``None`` when its credits start from different balances."""
    starts = {after - signed for after, signed in lines if signed > 0}
    return next(iter(starts)) if len(starts) == 1 else None


def chain_order(lines: Sequence[tuple[int, int]], before: int | None = None) -> list[int] | None:
    """The order the provider applied lines booked at the same instant, as indexes into
    ``lines`` ((balance after, signed amount) each): each line's balance before it is the
    balance after the one before. ``before``, the balance before the group when known,
    decides where a cycle (amounts that cancel) begins. ``None`` when they do not form
    one chain."""
    by_before: dict[int, list[int]] = {}
    for n, (after, signed) in enumerate(lines):
        by_before.setdefault(after - signed, []).append(n)
    afters = {after for after, _ in lines}
    starts = [n for n, (after, signed) in enumerate(lines) if after - signed not in afters]
    if not starts:
        begins = before if before is not None else _credit_first(lines)
        starts = by_before.get(begins, []) if begins is not None else []
    if len(starts) != 1:
        return None
    order, at = [starts[0]], lines[starts[0]][0]
    placed = {starts[0]}
    while len(order) < len(lines):
        following = [n for n in by_before.get(at, []) if n not in placed]
        if len(following) != 1:
            return None
        order.append(following[0])
        placed.add(following[0])
        at = lines[following[0]][0]
    return order


def _signed(S: FromClause) -> ColumnElement[int]:
    return case((S.c.type == "CREDIT", S.c.amount_cents), else_=-S.c.amount_cents)


def _lines_at(
    session: Session, where: ColumnElement[bool], instant: datetime
) -> list[tuple[int, int]]:
    """(balance after, signed amount) of the lines booked at ``instant``, in our order."""
    S = table_of(StatementEntry)
    rows = session.execute(
        select(S.c.balance_after_cents, _signed(S))
        .where(where, S.c.booked_at == instant)
        .order_by(S.c.id)
    )
    return [(int(after), int(amount)) for after, amount in rows]


def balance_before(session: Session, instant: datetime) -> int | None:
    """The latest balance known before ``instant``: a balance reading, or the running
    balance after the statement's last line booked before it, whichever is newer."""
    S, B = table_of(StatementEntry), table_of(BalanceSnapshot)
    reading = session.execute(
        select(B.c.taken_at, B.c.available_cents)
        .where(B.c.taken_at <= instant)
        .order_by(B.c.taken_at.desc())
        .limit(1)
    ).first()
    earlier = and_(S.c.booked_at < instant, S.c.balance_after_cents.is_not(None))
    last_at = session.execute(select(func.max(S.c.booked_at)).where(earlier)).scalar()
    if last_at is not None and (reading is None or as_utc(last_at) > as_utc(reading[0])):
        _, after = _chain_ends(
            _lines_at(session, earlier, last_at), lambda: balance_before(session, last_at)
        )
        return after
    return None if reading is None else int(reading[1])


def balance_after(session: Session, instant: datetime) -> int | None:
    """For a stretch with no line from ``instant`` on, whose statement was read: the
    first balance known after it — a reading, or the balance before the first line
    booked after it, whichever came first. Nothing moved in between (no line is stored
    there), so the balance stood there at ``instant`` too: the account's first days, and
    quiet days whose only neighbour is a later line, have a balance."""
    S, B = table_of(StatementEntry), table_of(BalanceSnapshot)
    reading = session.execute(
        select(B.c.taken_at, B.c.available_cents)
        .where(B.c.taken_at >= instant)
        .order_by(B.c.taken_at)
        .limit(1)
    ).first()
    later = and_(S.c.booked_at >= instant, S.c.balance_after_cents.is_not(None))
    first_at = session.execute(select(func.min(S.c.booked_at)).where(later)).scalar()
    if first_at is not None and (reading is None or as_utc(first_at) <= as_utc(reading[0])):
        opening, _ = _chain_ends(_lines_at(session, later, first_at))
        return opening
    return None if reading is None else int(reading[1])


def balance_drift(session: Session, ctx: RunContext) -> dict[str, Any]:
    """opening + credits - debits - closing, from the statement's running balance and
    the balance readings. Non-zero means lines are missing from what was polled (or the
    provider's books disagree with themselves)."""
    S, B = table_of(StatementEntry), table_of(BalanceSnapshot)
    with_balance = and_(ctx.within(S.c.booked_at), S.c.balance_after_cents.is_not(None))
    first_at, last_at = session.execute(
        select(func.min(S.c.booked_at), func.max(S.c.booked_at)).where(with_balance)
    ).one()

    def lines_at(instant: datetime) -> list[tuple[int, int]]:
        return _lines_at(session, with_balance, instant)

    opening_reading = session.execute(
        select(B.c.available_cents)
        .where(B.c.taken_at <= ctx.start)
        .order_by(B.c.taken_at.desc())
        .limit(1)
    ).scalar_one_or_none()
    credits, debits = session.execute(
        select(
            func.sum(case((S.c.type == "CREDIT", S.c.amount_cents), else_=0)),
            func.sum(case((S.c.type == "DEBIT", S.c.amount_cents), else_=0)),
        ).where(ctx.within(S.c.booked_at))
    ).one()
    if first_at is None or last_at is None:
        # No running balance to check against: the balance closes where the newest known
        # before the day left it, moved by the day's lines (none on a quiet day, which
        # has no reading of its own and still closes).
        opening = balance_before(session, ctx.start)
        moved = _cents(credits) - _cents(debits)
        quiet = not credits and not debits
        if opening is None and quiet:
            opening = balance_after(session, ctx.start)
        return {
            "opening_cents": opening,
            "closing_cents": None if opening is None else opening + moved,
            "drift_cents": None,
            "note": "no statement lines for the day"
            if quiet
            else "the day's statement lines carry no running balance",
        }
    statement_opening, _ = _chain_ends(
        lines_at(first_at), lambda: balance_before(session, first_at)
    )
    _, closing = _chain_ends(lines_at(last_at), lambda: balance_before(session, last_at))
    opening = opening_reading if opening_reading is not None else statement_opening
    drift = int(opening) + _cents(credits) - _cents(debits) - closing
    return {
        "opening_cents": int(opening),
        "closing_cents": closing,
        "drift_cents": drift,
        "note": None,
    }
