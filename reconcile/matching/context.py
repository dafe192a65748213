"""What every matcher needs to know about the run."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from sqlalchemy import ColumnElement, Subquery, and_, func, or_, select

from reconcile.db import table_of
from reconcile.models import StatementEntry
from reconcile.timeutil import BUSINESS_TZ, business_day_bounds

# Statement categories as the provider names them (the sandbox's names; a deployment whose
# provider says otherwise corrects them here, in one place).
RECEIVED = ("PIX_RECEIVED",)
REFUND_SENT = ("PIX_REFUND_SENT",)
PAYOUT = ("PIX_PAYMENT",)
PAYOUT_REFUND = ("PIX_PAYMENT_REFUND",)
INFRACTION_DEBIT = ("INFRACTION_DEBIT",)


@dataclass(frozen=True)
class RunContext:
    run_id: int
    day: date
    start: datetime  # UTC instant the business day starts
    end: datetime  # … and ends (exclusive)
    now: datetime
    statement_known: bool
    """Whether the day has statement lines at all; without them only notifications and
    API look-ups can agree."""

    @classmethod
    def for_day(cls, run_id: int, day: date, now: datetime, statement_known: bool) -> RunContext:
        start, end = business_day_bounds(day)
        return cls(run_id, day, start, end, now, statement_known)

    @property
    def today(self) -> date:
        return self.now.astimezone(BUSINESS_TZ).date()

    def within(self, column: ColumnElement[datetime]) -> ColumnElement[bool]:
        return and_(column >= self.start, column < self.end)


def in_categories(column: ColumnElement[str | None], names: tuple[str, ...]) -> ColumnElement[bool]:
    return or_(column.in_(names), column.is_(None))


def statement_lines(
    ctx: RunContext,
    key: str,
    side: str,
    categories: tuple[str, ...],
    *extra: ColumnElement[bool],
    label: str = "key",
) -> Subquery:
    """The day's statement lines of one side and kind, summed per ``key`` column:
    (``label``, ``sid`` — the first line, for the record — and ``cents``)."""
    S = table_of(StatementEntry)
    column = S.c[key]
    return (
        select(
            column.label(label),
            func.min(S.c.id).label("sid"),
            func.sum(S.c.amount_cents).label("cents"),
        )
        .where(
            S.c.type == side,
            in_categories(S.c.category, categories),
            column.is_not(None),
            ctx.within(S.c.booked_at),
            *extra,
        )
        .group_by(column)
        .subquery("s")
    )
