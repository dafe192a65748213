"""MED infractions: open cases (money at risk), and infraction debits in the statement
matched to their cases."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    ColumnElement,
    and_,
    case,
    false,
    func,
    null,
    or_,
    select,
    true,
    tuple_,
)
from sqlalchemy.sql import FromClause
from sqlmodel import Session

from reconcile import actions
from reconcile.db import table_of
from reconcile.matching.context import (
    INFRACTION_DEBIT,
    RunContext,
    in_categories,
    items_of,
    statement_lines,
)
from reconcile.matching.movements import source_of
from reconcile.matching.verdicts import Verdict, insert_verdicts
from reconcile.models import (
    OPEN_INFRACTION_STATES,
    UNKNOWN_INFRACTION_STATE,
    Confirmation,
    InboxItem,
    Infraction,
    StatementEntry,
)
from reconcile.priorities import med_urgent_before
from reconcile.timeutil import as_utc

OPEN_STATES = OPEN_INFRACTION_STATES
# The API stated the case's closing: its debit is the one it states.
API_STATED = (Confirmation.CONFIRMED.value, Confirmation.AMOUNT_MISMATCH.value)


def api_debit(cases: Any) -> ColumnElement[Any]:
    """The debit of a case the provider's API stands behind: what it states of the case's
    closing; none while it has not (docs/design.md §1.5)."""
    return case(
        (cases.c.confirmation.in_(API_STATED), cases.c.confirmed_debited_cents), else_=null()
    )


def counted_debit(cases: Any) -> ColumnElement[Any]:
    """The debit a case's verdict and the day's MED money count: the API's, or as notified
    where confirmation is off (``PIXRECON_CONFIRM_POLICY=none``), by that choice."""
    return case(
        (cases.c.confirmation.in_(API_STATED), cases.c.confirmed_debited_cents),
        (cases.c.confirmation == Confirmation.NOT_REQUIRED.value, cases.c.debited_cents),
        else_=null(),
    )


def stated_debit(cases: Any) -> ColumnElement[Any]:
    """The debit a line is matched by: the API's where it stated one, else the notified
    one (a case whose closing waits for the API still owns the line of its debit)."""
    return func.coalesce(cases.c.confirmed_debited_cents, cases.c.debited_cents)


def case_of_line() -> ColumnElement[str]:
    """The MED case a statement debit belongs to: its ``infractionId``; else the case that
    disputes the Pix the line names (of those, the one whose debit has its amount); else,
    for a bare line, a case whose debit has that amount and that no other line names
    (providers do not always say which case debited). When there are as many bare lines of
    an amount as such cases, each case has its debit, and the lines are paired with them
    in order (by booking, and by case id): which of two equal debits is whose changes no
    figure. Otherwise they stay unmatched: guessing which case went undebited would be a
    lie."""
    S, cases = table_of(StatementEntry), table_of(Infraction)
    # Two cases may dispute one Pix, each debited on a line naming it: the line goes to
    # the case whose debit it is by amount, before falling back to the first case.
    its_debit = func.coalesce(func.nullif(stated_debit(cases), 0), cases.c.amount_cents)
    of_pix = cases.c.end_to_end_id == S.c.end_to_end_id
    by_pix = func.coalesce(
        select(func.min(cases.c.infraction_id))
        .where(of_pix, its_debit == S.c.amount_cents)
        .scalar_subquery(),
        select(func.min(cases.c.infraction_id)).where(of_pix).scalar_subquery(),
    )
    other = S.alias("named_line")

    def candidate_for(case_row: FromClause) -> ColumnElement[bool]:
        """A case a bare line of this amount may be the debit of: its debit has the
        amount, and no line names it (by its id or its Pix)."""
        named = (
            select(other.c.id)
            .where(
                other.c.type == "DEBIT",
                in_categories(other.c.category, INFRACTION_DEBIT),
                or_(
                    other.c.infraction_id == case_row.c.infraction_id,
                    other.c.end_to_end_id == case_row.c.end_to_end_id,
                ),
            )
            .exists()
        )
        debited = stated_debit(case_row)
        debit = func.coalesce(func.nullif(debited, 0), case_row.c.amount_cents)
        # A case closed saying it debited nothing (``debitedAmount`` 0) owns no debit
        # line: it must not make a line of its amount ambiguous for the case that did.
        may_have_debited = or_(case_row.c.status.in_(OPEN_STATES), debited.is_(None), debited != 0)
        return and_(debit == S.c.amount_cents, may_have_debited, ~named)

    candidate = cases.alias("by_amount")
    candidates = candidate_for(candidate)
    bare = S.alias("bare_line")
    disputed = cases.alias("disputed")
    # Lines of the same amount that name no case and no Pix a case disputes: the ones a
    # case of that amount is looked for by amount.
    bare_alike = and_(
        bare.c.type == "DEBIT",
        in_categories(bare.c.category, INFRACTION_DEBIT),
        bare.c.infraction_id.is_(None),
        bare.c.amount_cents == S.c.amount_cents,
        ~select(disputed.c.id).where(disputed.c.end_to_end_id == bare.c.end_to_end_id).exists(),
    )
    # Correlated by hand: nested two deep, SQLAlchemy would read the line's table afresh.
    lines = select(func.count()).where(bare_alike).correlate(S).scalar_subquery()
    line_rank = (
        select(func.count())
        .where(bare_alike, tuple_(bare.c.booked_at, bare.c.id) <= tuple_(S.c.booked_at, S.c.id))
        .correlate(S)
        .scalar_subquery()
    )
    earlier = cases.alias("earlier_candidate")
    case_rank = (
        select(func.count())
        .select_from(earlier)
        .where(candidate_for(earlier), earlier.c.infraction_id <= candidate.c.infraction_id)
        .correlate(S, candidate)
        .scalar_subquery()
    )
    by_amount = (
        select(
            case(
                (func.count() == 1, func.min(candidate.c.infraction_id)),
                (
                    func.count() == lines,
                    func.min(case((case_rank == line_rank, candidate.c.infraction_id))),
                ),
                else_=None,
            )
        )
        .where(candidates)
        .scalar_subquery()
    )
    return func.coalesce(S.c.infraction_id, by_pix, by_amount)


def open_at_end(cases: Any, ctx: RunContext) -> ColumnElement[bool]:
    """Open as the day ended: opened by then, and not closed before it (a case closed since
    still counts as open for that day, so a re-run weeks later says the same). A closing
    the provider's API contradicts, stating the case still open, closed nothing: its money
    is still at risk."""
    changed = func.coalesce(cases.c.provider_updated_at, cases.c.updated_at)
    opened = func.coalesce(cases.c.opened_at, changed)
    return and_(
        opened < ctx.as_of,
        cases.c.status != UNKNOWN_INFRACTION_STATE,
        or_(
            cases.c.status.in_(OPEN_STATES),
            changed >= ctx.as_of,
            cases.c.confirmation == Confirmation.STATUS_MISMATCH.value,
        ),
    )


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
                open_at_end(case_table, ctx),
                case_table.c.infraction_id.in_(debited_today),
                # One the provider does not know: the day it was opened says so.
                and_(
                    case_table.c.status == UNKNOWN_INFRACTION_STATE,
                    ctx.within(func.coalesce(case_table.c.opened_at, case_table.c.updated_at)),
                ),
            )
        )
        .subquery("i")
    )
    inbox = table_of(InboxItem)
    joined = cases.join(s, cases.c.infraction_id == s.c.case_id, full=True).outerjoin(
        inbox, items_of(session, inbox, cases.c.inbox_item_id)
    )
    statement = true() if ctx.statement_known else false()
    closing = cases.c.confirmation
    debit = counted_debit(cases)
    # The closing a notification states and the API contradicts: the API's debit against
    # the notified one.
    contradicted = closing.in_(
        (Confirmation.AMOUNT_MISMATCH.value, Confirmation.STATUS_MISMATCH.value)
    )
    verdicts: list[Verdict] = [
        (
            cases.c.infraction_id.is_(None),
            "debit_without_case",
            True,
            "an infraction debit in the statement with no case known",
        ),
        (
            cases.c.status == UNKNOWN_INFRACTION_STATE,
            "unconfirmed_webhook",
            True,
            "a MED case notified, but the provider does not know it (possible forgery): "
            "nothing of it is at risk",
        ),
        (
            # A closing's look-up, left on a case notified open again since: that is open.
            and_(closing == Confirmation.STATUS_MISMATCH.value, ~cases.c.status.in_(OPEN_STATES)),
            "status_mismatch",
            True,
            f"notified closed, but {actions.MED_API_STATES_OPEN} (possible forgery): no debit "
            "of it counts",
        ),
        # After the closing the API says never happened: that notification is the
        # exception, though the case, still open, counts among the day's money at risk.
        (
            open_at_end(cases, ctx),
            "open_case",
            True,
            "an open MED case: the amount is at risk",
        ),
        (
            and_(
                closing == Confirmation.AMOUNT_MISMATCH.value, cases.c.confirmed_debited_cents == 0
            ),
            "status_mismatch",
            True,
            f"notified closed with a debit, but {actions.MED_API_STATES_NO_DEBIT} (possible "
            "forgery): no debit of it counts",
        ),
        (
            closing == Confirmation.AMOUNT_MISMATCH.value,
            "status_mismatch",
            True,
            "the notification contradicts the provider's API about the case's closing "
            "(possible forgery): only the debit the API states counts",
        ),
        (
            closing == Confirmation.UNCONFIRMED_WEBHOOK.value,
            "unconfirmed_webhook",
            True,
            "notified closed, but the provider's API does not know the case (possible "
            "forgery): no debit of it counts",
        ),
        (
            and_(
                closing == Confirmation.PENDING.value,
                cases.c.updated_at < ctx.confirmed_by,
            ),
            "unconfirmed_webhook",
            True,
            "notified closed, but the provider's API has not confirmed the closing within "
            "the grace period: no debit of it counts",
        ),
        (
            closing == Confirmation.PENDING.value,
            "pending",
            False,
            "notified closed: waiting for the provider's API to confirm its debit",
        ),
        (
            and_(debit > 0, s.c.case_id.is_(None), statement),
            "debit_never_came",
            True,
            "closed with a debit that the statement never booked",
        ),
        (
            and_(s.c.case_id.is_not(None), s.c.cents != debit),
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
        # A closing the API contradicts moved no money of its own, as a refund or a payout
        # the API contradicts (docs/exports.md): what the notification claimed, against
        # what a statement line booked (0 when none did); the case's amount otherwise.
        expected=case((contradicted, cases.c.debited_cents), else_=cases.c.amount_cents),
        # A case open as the day ended had debited nothing by then, whatever the date lag
        # books after midnight (the closing day's debit, and its verdict).
        actual=case(
            (contradicted, func.coalesce(s.c.cents, 0)),
            (and_(open_at_end(cases, ctx), s.c.booked >= ctx.end), null()),
            else_=s.c.cents,
        ),
        source=source_of(
            func.coalesce(inbox.c.webhook_count, 0), func.coalesce(inbox.c.poll_count, 0)
        ),
        inbox_item_id=cases.c.inbox_item_id,
        statement_id=s.c.sid,
        # Judged as of the day: its run says the same when re-run after the deadline.
        urgent=and_(open_at_end(cases, ctx), cases.c.deadline_at < med_urgent_before(ctx.day)),
    )


def med_exposure(session: Session, ctx: RunContext) -> dict[str, Any]:
    """MED money as the day ended: at risk in open cases and how much of it the provider
    blocked, and debited by the cases closed that day (what the provider's API states of
    each closing; nothing for one it has not confirmed); each of those
    cases with its deadline, the soonest first."""
    cases = table_of(Infraction)
    changed = func.coalesce(cases.c.provider_updated_at, cases.c.updated_at)
    is_open = open_at_end(cases, ctx)
    closed_today = and_(ctx.within(changed), ~is_open)
    rows = session.execute(
        select(
            cases.c.infraction_id,
            is_open.label("open"),
            cases.c.status,
            cases.c.amount_cents,
            cases.c.blocked_cents,
            counted_debit(cases).label("debited_cents"),
            cases.c.end_to_end_id,
            cases.c.opened_at,
            cases.c.deadline_at,
        )
        .where(or_(is_open, closed_today), cases.c.status != UNKNOWN_INFRACTION_STATE)
        .order_by(cases.c.deadline_at, cases.c.infraction_id)
    ).all()
    listed = [
        {
            "case_id": row.infraction_id,
            "state": "open" if row.open else "closed",
            # Closed since the day ended: it was open then, and its report must read so
            # whenever it is asked (the statuses it went through are not kept).
            "status": "OPEN" if row.open and row.status not in OPEN_STATES else row.status,
            "end_to_end_id": row.end_to_end_id,
            "amount_cents": row.amount_cents or 0,
            "blocked_cents": row.blocked_cents or 0,
            "debited_cents": 0 if row.open else (row.debited_cents or 0),
            "opened_at": as_utc(row.opened_at).isoformat() if row.opened_at else None,
            "deadline_at": as_utc(row.deadline_at).isoformat() if row.deadline_at else None,
        }
        for row in rows
    ]
    still_open = [case for case in listed if case["state"] == "open"]
    return {
        "open_cases": len(still_open),
        "at_risk_cents": sum(case["amount_cents"] for case in still_open),
        "blocked_cents": sum(case["blocked_cents"] for case in still_open),
        "debited_cents": sum(case["debited_cents"] for case in listed),
        "cases": listed,
    }
