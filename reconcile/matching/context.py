"""What every matcher needs to know about the run: the day, the instant it is judged at,
the rules that depend on configuration, and the provider's statement categories."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Subquery, and_, func, or_, select
from sqlalchemy.sql import FromClause
from sqlmodel import Session

from reconcile.db import table_of
from reconcile.models import StatementEntry
from reconcile.settings import Settings
from reconcile.timeutil import BUSINESS_TZ, business_day_bounds

# Statement categories as the provider names them (the sandbox's names; a deployment whose
# provider says otherwise corrects them here, in one place).
RECEIVED = ("PIX_RECEIVED",)
REFUND_SENT = ("PIX_REFUND_SENT",)
PAYOUT = ("PIX_PAYMENT",)
PAYOUT_REFUND = ("PIX_PAYMENT_REFUND",)
INFRACTION_DEBIT = ("INFRACTION_DEBIT",)
# The provider's own fees (tarifas): recognised, never matched to a movement.
FEE = ("PIX_RECEIVED_FEE", "FEE", "TARIFA")
KNOWN = RECEIVED + REFUND_SENT + PAYOUT + PAYOUT_REFUND + INFRACTION_DEBIT + FEE
# Refund natures of a MED return (the BCB's natureza): money the MED took back, kept
# apart from the merchant's own refunds.
MED_NATURES = ("MED_OPERACIONAL", "MED_FRAUDE", "MED_PIX_AUTOMATICO")


@dataclass(frozen=True)
class Judging:
    """The configurable rules a day is judged by."""

    grace: timedelta = timedelta(seconds=900)
    """A notified movement the API does not know yet is pending this long, then a break."""
    date_lag: timedelta = timedelta(seconds=300)
    """How long after midnight a statement line may be booked for the day before."""
    refund_days: int = 90
    refund_warning_days: int = 10

    @classmethod
    def from_settings(cls, settings: Settings) -> Judging:
        return cls(
            grace=timedelta(seconds=settings.confirm_grace_seconds),
            date_lag=timedelta(seconds=settings.reconcile_date_lag_seconds),
            refund_days=settings.refund_deadline_days,
            refund_warning_days=settings.refund_warning_days,
        )


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
    judging: Judging = field(default_factory=Judging)
    parallel: bool = False
    """A big day on PostgreSQL: matched on several connections at once
    (``reconcile.matching.parallel``)."""

    @classmethod
    def for_day(
        cls,
        run_id: int,
        day: date,
        now: datetime,
        statement_known: bool,
        judging: Judging | None = None,
    ) -> RunContext:
        start, end = business_day_bounds(day)
        return cls(run_id, day, start, end, now, statement_known, judging or Judging())

    @property
    def as_of(self) -> datetime:
        """The instant the day is judged at: its end, or now if it is not over. Expiry,
        due dates and grace periods are evaluated here, so a past day re-run weeks later
        gives the same answer."""
        return min(self.now, self.end)

    @property
    def today(self) -> date:
        return self.as_of.astimezone(BUSINESS_TZ).date()

    @property
    def statement_end(self) -> datetime:
        """Statement lines for the day's movements may be booked up to here."""
        return self.end + self.judging.date_lag

    @property
    def statement_settled(self) -> bool:
        """Past the date lag: a movement of the day still not booked never will be."""
        return self.now >= self.statement_end

    @property
    def confirmed_by(self) -> datetime:
        """Notified before this instant and still unconfirmed: past the grace period."""
        return self.as_of - self.judging.grace

    @property
    def refund_by(self) -> date:
        """The last day money received on this day can be refunded."""
        return self.day + timedelta(days=self.judging.refund_days)

    def within(self, column: ColumnElement[datetime]) -> ColumnElement[bool]:
        return and_(column >= self.start, column < self.end)

    def before(self, column: ColumnElement[datetime]) -> ColumnElement[bool]:
        """On the day before: a movement of it that today's statement booked within the date
        lag was that day's (carried out there), and is carried in here."""
        previous = business_day_bounds(self.day - timedelta(days=1))[0]
        return and_(column >= previous, column < self.start)

    def in_lag(self, booked: ColumnElement[datetime]) -> ColumnElement[bool]:
        """Booked today within the date lag after midnight: the day before counted it."""
        return booked < self.start + self.judging.date_lag


def in_categories(column: ColumnElement[str | None], names: tuple[str, ...]) -> ColumnElement[bool]:
    return or_(column.in_(names), column.is_(None))


def statement_lines(
    ctx: RunContext,
    key: str | ColumnElement[Any],
    side: str,
    categories: tuple[str, ...],
    *extra: ColumnElement[bool],
    label: str = "key",
) -> Subquery:
    """The statement lines of one side and kind booked from the day's start up to the
    date lag after its end, summed per ``key`` (a column name, or an expression over
    ``statement_entry``): (``label``, ``sid`` — the first
    line, for the record —, ``cents`` — before any netted fee — and ``booked``, the first
    booking instant: after the day's end means carried out to the next day)."""
    S = table_of(StatementEntry)
    column = S.c[key] if isinstance(key, str) else key
    return (
        select(
            column.label(label),
            func.min(S.c.id).label("sid"),
            func.sum(S.c.amount_cents + func.coalesce(S.c.fee_cents, 0)).label("cents"),
            func.min(S.c.booked_at).label("booked"),
        )
        .where(
            S.c.type == side,
            in_categories(S.c.category, categories),
            column.is_not(None),
            S.c.booked_at >= ctx.start,
            S.c.booked_at < ctx.statement_end,
            *extra,
        )
        .group_by(column)
        .subquery("s")
    )


def items_of(
    session: Session, inbox: FromClause, item_ids: ColumnElement[int]
) -> ColumnElement[bool]:
    """``inbox`` joined by id to rows whose items are ``item_ids`` (a column of a
    subquery of the day's rows), and read from the lowest of those ids on: implied by the
    join, and said so because the inbox keeps every day until retention prunes it and its
    ids grow as items arrive, so from there on is about a day of it however many days it
    holds. The lowest id is looked up first and given as a value, not as a subquery, so
    that the planner knows how much of the inbox lies beyond it: with a day or two kept,
    nearly all of it, which one pass over the table reads faster than its index."""
    # ``+ 0``: not the column itself, or PostgreSQL would find the lowest by walking that
    # column's index from its lowest id, through every earlier day, to the first of this.
    lowest = session.execute(select(func.min(item_ids + 0))).scalar_one()
    joined = inbox.c.id == item_ids
    return joined if lowest is None else and_(joined, inbox.c.id >= lowest)
