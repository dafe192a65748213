"""The balance drift: what the provider's statement says against its own balances."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, case, func, select
from sqlmodel import Session

from reconcile.db import table_of
from reconcile.matching.context import RunContext
from reconcile.models import (
    BalanceSnapshot,
    StatementEntry,
)


def _cents(value: Any) -> int:
    return int(value or 0)


def _chain_ends(lines: Sequence[tuple[int, int]]) -> tuple[int, int]:
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
    # Not one chain (a line missing inside the group, or amounts that cancel): fall back to
    # the group's extremes by our own order, and let the drift show what does not add up.
    (first_after, first_signed), (last_after, _) = lines[0], lines[-1]
    return first_after - first_signed, last_after


def balance_drift(session: Session, ctx: RunContext) -> dict[str, Any]:
    """opening + credits - debits - closing, from the statement's running balance and
    the balance readings. Non-zero means lines are missing from what was polled (or the
    provider's books disagree with themselves)."""
    S, B = table_of(StatementEntry), table_of(BalanceSnapshot)
    signed = case((S.c.type == "CREDIT", S.c.amount_cents), else_=-S.c.amount_cents)
    with_balance = and_(ctx.within(S.c.booked_at), S.c.balance_after_cents.is_not(None))
    first_at, last_at = session.execute(
        select(func.min(S.c.booked_at), func.max(S.c.booked_at)).where(with_balance)
    ).one()

    def lines_at(instant: datetime) -> list[tuple[int, int]]:
        rows = session.execute(
            select(S.c.balance_after_cents, signed)
            .where(with_balance, S.c.booked_at == instant)
            .order_by(S.c.id)
        )
        return [(int(after), int(amount)) for after, amount in rows]

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
        return {
            "opening_cents": opening_reading,
            "closing_cents": None,
            "drift_cents": None,
            "note": "no statement lines for the day",
        }
    statement_opening, _ = _chain_ends(lines_at(first_at))
    _, closing = _chain_ends(lines_at(last_at))
    opening = opening_reading if opening_reading is not None else statement_opening
    drift = int(opening) + _cents(credits) - _cents(debits) - closing
    return {
        "opening_cents": int(opening),
        "closing_cents": closing,
        "drift_cents": drift,
        "note": None,
    }
