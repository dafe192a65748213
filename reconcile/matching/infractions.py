"""MED infractions: open cases (money at risk), and infraction debits in the statement
matched to their cases."""

from __future__ import annotations

from sqlalchemy import ColumnElement, String, and_, false, func, literal, or_, select, true
from sqlmodel import Session

from reconcile.db import table_of
from reconcile.matching.context import INFRACTION_DEBIT, RunContext, statement_lines
from reconcile.matching.verdicts import Verdict, insert_verdicts
from reconcile.models import Infraction, StatementEntry

OPEN_STATES = ("OPEN", "ACKNOWLEDGED")


def case_of_line() -> ColumnElement[str]:
    """The MED case a statement debit belongs to: its ``infractionId``, else the case that
    disputes the Pix the line names (providers do not always say which case debited)."""
    S, cases = table_of(StatementEntry), table_of(Infraction)
    by_pix = (
        select(cases.c.infraction_id)
        .where(cases.c.end_to_end_id == S.c.end_to_end_id)
        .order_by(cases.c.infraction_id)
        .limit(1)
        .scalar_subquery()
    )
    return func.coalesce(S.c.infraction_id, by_pix)


def match_infractions(session: Session, ctx: RunContext) -> None:
    case_table = table_of(Infraction)
    s = statement_lines(ctx, case_of_line(), "DEBIT", INFRACTION_DEBIT, label="case_id")
    # The day's cases: opened or closed that day (by the provider's clock), debited that
    # day, or still open (money at risk is news every day).
    debited_today = select(s.c.case_id)
    cases = (
        select(case_table)
        .where(
            or_(
                ctx.within(
                    func.coalesce(case_table.c.provider_updated_at, case_table.c.updated_at)
                ),
                case_table.c.status.in_(OPEN_STATES),
                case_table.c.infraction_id.in_(debited_today),
            )
        )
        .subquery("i")
    )
    joined = cases.join(s, cases.c.infraction_id == s.c.case_id, full=True)
    statement = true() if ctx.statement_known else false()
    verdicts: list[Verdict] = [
        (
            cases.c.infraction_id.is_(None),
            "debit_without_case",
            True,
            "an infraction debit in the statement with no case known",
        ),
        (
            cases.c.status.in_(OPEN_STATES),
            "open_case",
            True,
            "an open MED case: the amount is at risk",
        ),
        (
            and_(cases.c.debited_cents > 0, s.c.case_id.is_(None), statement),
            "debit_never_came",
            True,
            "closed with a debit that the statement never booked",
        ),
        (
            and_(s.c.case_id.is_not(None), s.c.cents != cases.c.debited_cents),
            "amount_mismatch",
            True,
            "the statement debited another amount than the case states",
        ),
    ]
    insert_verdicts(
        session,
        ctx,
        "infraction",
        func.coalesce(cases.c.infraction_id, s.c.case_id),
        joined,
        verdicts,
        "closed, and any debit booked",
        default_status="closed",
        expected=cases.c.amount_cents,
        actual=s.c.cents,
        source=literal("poll", String),
        inbox_item_id=cases.c.inbox_item_id,
        statement_id=s.c.sid,
    )


def med_exposure(session: Session, ctx: RunContext) -> dict[str, int]:
    """MED money at the end of the day: at risk in open cases, and debited by the cases
    closed that day (the provider's word)."""
    cases = table_of(Infraction)
    at_risk, open_cases = session.execute(
        select(func.sum(cases.c.amount_cents), func.count()).where(cases.c.status.in_(OPEN_STATES))
    ).one()
    debited = session.execute(
        select(func.sum(cases.c.debited_cents)).where(
            ctx.within(func.coalesce(cases.c.provider_updated_at, cases.c.updated_at)),
            cases.c.status.not_in(OPEN_STATES),
        )
    ).scalar_one()
    return {
        "open_cases": int(open_cases or 0),
        "at_risk_cents": int(at_risk or 0),
        "debited_cents": int(debited or 0),
    }
