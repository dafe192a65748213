"""Movements: each Pix received and each refund sent, matched by key across what was
notified, what the API confirmed and what the statement booked. A movement of the day
booked a little after midnight is matched across the two days (carried out; the next day
sees its line carried in), never a break."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    String,
    Subquery,
    and_,
    case,
    func,
    literal,
    null,
    or_,
    select,
)
from sqlalchemy.sql import FromClause
from sqlmodel import Session

from reconcile import actions
from reconcile.db import table_of
from reconcile.formats import sp_time
from reconcile.matching.context import (
    MED_NATURES,
    RECEIVED,
    REFUND_SENT,
    RunContext,
    items_of,
    statement_lines,
)
from reconcile.matching.parallel import WHOLE, KeyRange, is_big, run_ranges, split_in_two
from reconcile.matching.verdicts import Verdict, insert_verdicts
from reconcile.models import Confirmation, InboxItem, PixReceived, PixRefund, StatementEntry

# The exceptions of a Pix received whose money may have to go back, once booked.
RETURNABLE = frozenset({"missing_webhook", "unconfirmed_webhook", "amount_mismatch"})


def source_of(webhooks: ColumnElement[int], polls: ColumnElement[int]) -> ColumnElement[str]:
    return case(
        (and_(webhooks > 0, polls > 0), "both"),
        (webhooks > 0, "webhook"),
        (polls > 0, "poll"),
        else_="statement",
    )


def carried(
    ours: ColumnElement[Any],
    booked: ColumnElement[Any],
    ctx: RunContext,
    the_day_before: ColumnElement[bool],
) -> ColumnElement[str]:
    """``in``: a line booked today for a movement of an earlier day (``the_day_before``:
    one was found before the day); ``out``: a movement of the day booked
    after midnight. A line nobody notified is neither: it is the day's exception, and its
    money stays in the bridge's difference."""
    return case(
        (and_(ours.is_(None), the_day_before), literal("in", String)),
        (booked >= ctx.end, literal("out", String)),
        else_=null(),
    )


def pix_time(P: FromClause) -> ColumnElement[datetime]:
    """When a Pix received happened: its ``horario``, else when it was first stored."""
    return func.coalesce(P.c.horario, P.c.created_at)


def is_big_day(session: Session, ctx: RunContext) -> bool:
    """Whether the day's Pix received are many enough to match on several connections."""
    return is_big(session, table_of(PixReceived), lambda P: ctx.within(pix_time(P)))


def match_received(session: Session, ctx: RunContext) -> None:
    """On a big day, in two ranges of the key space at once (``reconcile.matching.parallel``)."""
    ranges = (
        split_in_two(
            session, table_of(PixReceived), "end_to_end_id", lambda P: ctx.within(pix_time(P))
        )
        if ctx.parallel
        else [WHOLE]
    )
    run_ranges(session, ranges, lambda own, keys: _match_received(own, ctx, keys))


def _match_received(session: Session, ctx: RunContext, keys: KeyRange) -> None:
    P, S, inbox = table_of(PixReceived), table_of(StatementEntry), table_of(InboxItem)
    p = (
        select(
            P.c.end_to_end_id.label("e2e"),
            P.c.amount_cents,
            P.c.confirmation,
            P.c.confirmed_amount_cents,
            P.c.inbox_item_id,
            P.c.created_at,
        )
        .where(ctx.within(pix_time(P)), *keys.holds(P.c.end_to_end_id))
        .subquery("p")
    )
    s = statement_lines(
        ctx, "end_to_end_id", "CREDIT", RECEIVED, *keys.holds(S.c.end_to_end_id), label="e2e"
    )
    R = table_of(PixRefund)
    made, made_cents = refunds_made(R)
    refunded = (
        select(R.c.end_to_end_id.label("e2e"), func.sum(made_cents).label("cents"))
        # As of the day's end, as everything a day is judged by.
        .where(made, refund_time(R) < ctx.end)
        .group_by(R.c.end_to_end_id)
        .subquery("refunded")
    )
    ref = func.coalesce(p.c.e2e, s.c.e2e)
    item = inbox.alias("item")
    # The inbox joined to the Pix before the statement, not after: it only ever matches a
    # Pix, and joined first PostgreSQL merges the two by item id (both indexed) instead of
    # hashing half a million joined rows to probe them with the inbox.
    joined = (
        p.outerjoin(
            item,
            and_(
                items_of(session, item, p.c.inbox_item_id),
                # Implied by the line above; said so that only the items of this range
                # are joined.
                *keys.holds(item.c.key, prefix="pix:"),
            ),
        )
        .join(s, p.c.e2e == s.c.e2e, full=True)
        .outerjoin(refunded, refunded.c.e2e == p.c.e2e)
    )

    def lost(column: ColumnElement[Any]) -> ColumnElement[Any]:
        """A line nobody notified may still have an item (one that could not be
        processed): looked up by key, for those few lines only."""
        found = select(column).where(inbox.c.key == literal("pix:", String) + s.c.e2e)
        return case((p.c.e2e.is_(None), found.scalar_subquery()), else_=null())

    webhooks = func.coalesce(item.c.webhook_count, lost(inbox.c.webhook_count), 0)
    polls = func.coalesce(item.c.poll_count, lost(inbox.c.poll_count), 0)
    booked = s.c.e2e.is_not(None)
    # A Pix of an earlier day the statement booked only today: within the date lag, one of
    # the day before (which counted it, carried out); past it, its own day's exception
    # says so ("had not booked it by"). Either way its line is explained, not money nobody
    # notified to be refunded. Looked up for the lines no Pix of the day matched only, by
    # the Pix's key.
    late = table_of(PixReceived).alias("late")

    def earlier(when: ColumnElement[bool]) -> ColumnElement[bool]:
        found = select(late.c.end_to_end_id).where(late.c.end_to_end_id == s.c.e2e, when)
        return and_(p.c.e2e.is_(None), found.exists())

    booked_late = earlier(pix_time(late) < ctx.start)
    carried_in = and_(ctx.in_lag(s.c.booked), earlier(ctx.before(pix_time(late))))
    pending = p.c.confirmation == Confirmation.PENDING.value
    refunded_cents = func.coalesce(refunded.c.cents, 0)
    disputed = p.c.confirmation == Confirmation.AMOUNT_MISMATCH.value
    verdicts: list[Verdict] = [
        (carried_in, "matched", False, "received the day before and booked today (carried in)"),
        (
            booked_late,
            "matched",
            False,
            "received on an earlier day and booked only today, past the date lag (carried "
            "in; its own day's exception says it was not booked in time)",
        ),
        (
            p.c.e2e.is_(None),
            "missing_webhook",
            True,
            "booked in the statement, but neither notified nor found by polling",
        ),
        (
            p.c.confirmation == Confirmation.UNCONFIRMED_WEBHOOK.value,
            "unconfirmed_webhook",
            True,
            "notified, but the API does not know it (possible forgery)",
        ),
        (
            p.c.confirmation == Confirmation.AMOUNT_MISMATCH.value,
            "amount_mismatch",
            True,
            "the API states another amount than the notification",
        ),
        (
            and_(booked, s.c.cents != p.c.amount_cents),
            "amount_mismatch",
            True,
            "the statement booked another amount",
        ),
        (
            refunded_cents > p.c.amount_cents,
            "amount_mismatch",
            True,
            "refunds settled exceed the Pix they refund",
        ),
        (
            and_(pending, p.c.created_at < ctx.confirmed_by),
            "unconfirmed_webhook",
            True,
            "not confirmed by the API within the grace period",
        ),
        (
            pending,
            "pending",
            False,
            "waiting for the API to confirm it (inside the grace period)",
        ),
        *booking_verdicts(ctx, booked, "received"),
        (
            webhooks == 0,
            "missing_webhook",
            False,
            "found by polling only: no webhook came (counted, nothing lost)",
        ),
    ]
    insert_verdicts(
        session,
        ctx,
        "movement",
        ref,
        joined,
        verdicts,
        "notified, confirmed and booked",
        # What the provider stands behind: the API's amount where it contradicts the
        # notification, else the statement's, so that a line booked with another amount
        # shows that amount (for every agreeing Pix the three are equal).
        expected=case(
            (p.c.confirmation == Confirmation.AMOUNT_MISMATCH.value, p.c.confirmed_amount_cents),
            else_=func.coalesce(s.c.cents, p.c.confirmed_amount_cents),
        ),
        # What moved: as notified; a line nobody notified, as booked (one of an earlier
        # day's Pix, carried in, is that day's money).
        actual=case((and_(p.c.e2e.is_(None), ~booked_late), s.c.cents), else_=p.c.amount_cents),
        source=source_of(webhooks, polls),
        inbox_item_id=func.coalesce(p.c.inbox_item_id, lost(inbox.c.id)),
        statement_id=s.c.sid,
        where=or_(p.c.e2e.is_not(None), s.c.booked < ctx.end),
        carried=carried(p.c.e2e, s.c.booked, ctx, booked_late),
        # Only money the provider stands behind: what its API states where it contradicts
        # the notification, nothing for a Pix it does not know (yet), so that an export's
        # net column never books a forged or unconfirmed Pix.
        # The agreeing Pix, nearly all of a million, is tested first.
        net=case(
            (
                p.c.confirmation.in_(Confirmation.counted()),
                case(
                    (refunded_cents >= p.c.amount_cents, 0),
                    else_=p.c.amount_cents - refunded_cents,
                ),
            ),
            (and_(disputed, refunded_cents >= p.c.confirmed_amount_cents), 0),
            (disputed, p.c.confirmed_amount_cents - refunded_cents),
            else_=null(),
        ),
        webhooks=webhooks,
        # Booked money the provider does not stand behind, as notified: the payer's bank may
        # claim it back (a refund or a MED) within the refund window.
        refundable=RETURNABLE,
        # A Pix the API does not stand behind: what was notified, and what the statement
        # booked of it.
        notified=p.c.amount_cents,
        booked=s.c.cents,
    )


def booking_verdicts(ctx: RunContext, booked: ColumnElement[bool], what: str) -> list[Verdict]:
    """A movement the statement should book: pending until the date lag after the day is
    over, then a break. Without a statement for the day nothing can be said here (the day
    is then ``incomplete``)."""
    if not ctx.statement_known:
        return []
    if not ctx.statement_settled:
        return [(~booked, "pending", False, "not in the statement yet")]
    return [
        (
            ~booked,
            "status_mismatch",
            True,
            # Stored when the run is judged: a line booked later still is on a later
            # day's statement, and this day's answer must not change with it.
            f"{what}, but the statement had not booked it by {sp_time(ctx.statement_end)}",
        )
    ]


def refund_ref(R: FromClause) -> ColumnElement[str]:
    """A refund's key: its ``rtrId``, else the refunded Pix and the merchant's id."""
    return func.coalesce(R.c.rtr_id, R.c.end_to_end_id + literal(":", String) + R.c.refund_id)


def refund_time(R: FromClause) -> ColumnElement[datetime]:
    return func.coalesce(R.c.settled_at, R.c.requested_at, R.c.updated_at)


def api_states_made(R: FromClause) -> ColumnElement[bool]:
    """A refund notified otherwise that the provider's API states made (``status_mismatch``
    with the outcome it stated kept): the money left."""
    return and_(
        R.c.confirmation == Confirmation.STATUS_MISMATCH.value,
        R.c.confirmed_status == "DEVOLVIDO",
    )


def refunds_made(R: FromClause) -> tuple[ColumnElement[bool], ColumnElement[int]]:
    """The refunds that gave money back as the provider's API stands behind them, and how
    much each gave: notified as made and confirmed (at the amount the API states, where it
    states another), or notified otherwise while the API states it made. A refund notified
    as made that the API denies, or has not confirmed, gave nothing back a Pix's net or a
    charge may count."""
    notified_made = R.c.status == "DEVOLVIDO"
    made = or_(and_(notified_made, R.c.confirmation.in_(Confirmation.stated())), api_states_made(R))
    cents = case(
        (R.c.confirmation.in_(Confirmation.counted()), R.c.amount_cents),
        else_=func.coalesce(R.c.confirmed_amount_cents, R.c.amount_cents),
    )
    return made, cents


def _refunded_over_earlier_pix(ctx: RunContext) -> Subquery:
    """The Pix of earlier days whose refunds made by the day's end exceed them (at the
    amount the API states). A Pix's own day judges its refunds made by then; one refunded
    over on a later day is that day's: its refunds of the day say so, or the day the
    money went out would read "all reconciled"."""
    P, given = table_of(PixReceived), table_of(PixRefund).alias("given")
    todays = table_of(PixRefund).alias("todays")
    made, made_cents = refunds_made(given)
    # Only the Pix refunded in the day: every Pix ever refunded, each joined to its
    # Pix, would grow with the history the tables keep.
    refunded_today = select(todays.c.end_to_end_id).where(ctx.within(refund_time(todays)))
    refunded = (
        select(given.c.end_to_end_id.label("e2e"), func.sum(made_cents).label("cents"))
        .where(made, refund_time(given) < ctx.end, given.c.end_to_end_id.in_(refunded_today))
        .group_by(given.c.end_to_end_id)
        .subquery("refunded")
    )
    value = case(
        (P.c.confirmation == Confirmation.AMOUNT_MISMATCH.value, P.c.confirmed_amount_cents),
        else_=P.c.amount_cents,
    )
    return (
        select(P.c.end_to_end_id.label("e2e"))
        .join(refunded, refunded.c.e2e == P.c.end_to_end_id)
        .where(pix_time(P) < ctx.start, refunded.c.cents > value)
        .subquery("over")
    )


def match_refunds(session: Session, ctx: RunContext) -> None:
    R, S, inbox = table_of(PixRefund), table_of(StatementEntry), table_of(InboxItem)
    ref_of = refund_ref(R)
    # Requested in the day and settled after it: in progress at the day's end. The day it
    # settled judges its money; this one shows it pending whenever it is asked (a refund
    # is dated by its settlement once it has one).
    settles_later = and_(ctx.within(R.c.requested_at), R.c.settled_at >= ctx.end)
    rows = (
        select(
            ref_of.label("ref"),
            R.c.rtr_id,
            R.c.end_to_end_id,
            R.c.amount_cents,
            R.c.status,
            R.c.natureza,
            R.c.inbox_item_id,
            R.c.confirmation,
            R.c.confirmed_amount_cents,
            R.c.confirmed_status,
            R.c.updated_at,
            # One refund may have been stored as two rows (by each of its ids, before
            # they were tied): the most advanced speaks for it, or the day's verdicts
            # would hold its ref twice.
            func.row_number()
            .over(partition_by=ref_of, order_by=(R.c.rank.desc(), R.c.id.desc()))
            .label("nth"),
            settles_later.label("later"),
        )
        .where(or_(ctx.within(refund_time(R)), settles_later))
        .subquery("rows")
    )
    r = (
        select(
            *(c for c in rows.c if c.name not in ("nth", "rtr_id")),
            # A refund settled later is not matched to a line here: its line is its day's.
            case((rows.c.later, null()), else_=rows.c.rtr_id).label("rtr_id"),
        )
        .where(rows.c.nth == 1)
        .subquery("r")
    )
    s = statement_lines(
        ctx, "end_to_end_id", "DEBIT", REFUND_SENT, S.c.end_to_end_id.like("D%"), label="rtr"
    )
    ref = func.coalesce(r.c.ref, s.c.rtr)
    over = _refunded_over_earlier_pix(ctx)
    joined = (
        r.join(s, r.c.rtr_id == s.c.rtr, full=True)
        .outerjoin(inbox, items_of(session, inbox, r.c.inbox_item_id))
        .outerjoin(over, over.c.e2e == r.c.end_to_end_id)
    )
    # A refund of an earlier day booked only today, as for the Pix received: within the
    # date lag, the day before's; past it, its own day said it was not booked in time.
    late = R.alias("late")

    def earlier(when: ColumnElement[bool]) -> ColumnElement[bool]:
        found = select(late.c.id).where(late.c.rtr_id == s.c.rtr, when)
        return and_(r.c.ref.is_(None), found.exists())

    booked_late = earlier(refund_time(late) < ctx.start)
    carried_in = and_(ctx.in_lag(s.c.booked), earlier(ctx.before(refund_time(late))))
    webhooks = func.coalesce(inbox.c.webhook_count, 0)
    polls = func.coalesce(inbox.c.poll_count, 0)
    booked = s.c.rtr.is_not(None)
    med = r.c.natureza.in_(MED_NATURES)
    # ``later`` is NULL for a refund with no settlement time: a refused one, above all.
    refused = and_(r.c.status == "NAO_REALIZADO", ~booked, r.c.later.is_not(True))
    api_amount_differs = r.c.confirmation == Confirmation.AMOUNT_MISMATCH.value
    api_denies = r.c.confirmation == Confirmation.STATUS_MISMATCH.value
    waiting = r.c.confirmation == Confirmation.PENDING.value
    verdicts: list[Verdict] = [
        (carried_in, "matched", False, "refunded the day before and booked today (carried in)"),
        (
            booked_late,
            "matched",
            False,
            "refunded on an earlier day and booked only today, past the date lag (carried in; "
            "its own day says it was not booked in time)",
        ),
        (
            r.c.ref.is_(None),
            "missing_webhook",
            True,
            "a refund booked in the statement that was never notified nor polled",
        ),
        (r.c.later, "pending", False, "refund still being processed"),
        (
            r.c.confirmation.in_(
                (Confirmation.UNCONFIRMED_WEBHOOK.value, Confirmation.UNVERIFIABLE.value)
            ),
            "unconfirmed_webhook",
            True,
            "a refund notified, but the API does not know it (possible forgery): do not count it",
        ),
        # What the API states of a refund it knows outranks the statement: a refund it says
        # was not made, notified as made, is not money that left, booked or not. Named as
        # the API stated it where that was kept (refunds confirmed since it is).
        (
            and_(api_denies, r.c.confirmed_status == "NAO_REALIZADO"),
            "status_mismatch",
            True,
            f"a refund notified as made, but {actions.api_states_refund('NAO_REALIZADO')} "
            "(possible forgery): do not count it as sent",
        ),
        (
            and_(api_denies, r.c.confirmed_status == "DEVOLVIDO"),
            "status_mismatch",
            True,
            f"a refund notified as not made, but {actions.api_states_refund('DEVOLVIDO')} "
            "(possible forgery): the money left",
        ),
        (
            api_denies,
            "status_mismatch",
            True,
            f"a refund notified as made, but {actions.API_STATES_OTHERWISE} for it (possible "
            "forgery): do not count it as sent",
        ),
        (
            api_amount_differs,
            "amount_mismatch",
            True,
            "a refund notified with another amount than the provider's API states",
        ),
        (
            and_(booked, s.c.cents != r.c.amount_cents),
            "amount_mismatch",
            True,
            "the statement booked another refund amount",
        ),
        (
            and_(over.c.e2e.is_not(None), refunds_made(r)[0]),
            "amount_mismatch",
            True,
            f"{actions.REFUNDS_EXCEED}, received on an earlier day",
        ),
        (
            and_(r.c.status == "NAO_REALIZADO", booked),
            "status_mismatch",
            True,
            "notified as not made, but the statement booked it",
        ),
        (
            r.c.status == "NAO_REALIZADO",
            "matched",
            False,
            "refused by the provider (NAO_REALIZADO): no money moved",
        ),
        (r.c.status == "EM_PROCESSAMENTO", "pending", False, "refund still being processed"),
        # Money said to have left counts once the API stands behind it, as a Pix received's
        # does: a statement line booking it is no look-up (the bridge's API column leaves
        # it out), so the refund says why rather than passing as matched.
        (
            and_(waiting, r.c.updated_at < ctx.confirmed_by),
            "unconfirmed_webhook",
            True,
            "a refund notified, but the provider's API has not confirmed it within the grace "
            "period: do not count it as sent",
        ),
        (
            waiting,
            "pending",
            False,
            "a refund notified: waiting for the provider's API to confirm it (inside the "
            "grace period)",
        ),
        *booking_verdicts(ctx, booked, "refunded"),
        (
            and_(webhooks == 0, med),
            "missing_webhook",
            False,
            "a MED return found by polling only: no webhook came",
        ),
        (
            webhooks == 0,
            "missing_webhook",
            False,
            "a refund found by polling only: no webhook came",
        ),
        (med, "matched", False, "a MED return, notified and booked"),
    ]
    insert_verdicts(
        session,
        ctx,
        "movement",
        ref,
        joined,
        verdicts,
        "refund notified and booked",
        # A refund the provider refused moved nothing: what was asked, and nothing moved.
        # One the API states with another amount: what it stands behind.
        expected=case(
            (api_amount_differs, r.c.confirmed_amount_cents),
            (or_(refused, api_denies), r.c.amount_cents),
            else_=s.c.cents,
        ),
        # A refund the API says was not made moved nothing, whatever was notified: a sum of
        # ``actual`` is money that moved (what a line booked of it, if one did).
        actual=case(
            # A debit nobody notified moved as booked (an earlier day's refund's, not here).
            (and_(r.c.ref.is_(None), ~booked_late), s.c.cents),
            (refused, literal(0, BigInteger)),
            (api_denies, func.coalesce(s.c.cents, literal(0, BigInteger))),
            else_=r.c.amount_cents,
        ),
        source=source_of(webhooks, polls),
        inbox_item_id=r.c.inbox_item_id,
        statement_id=s.c.sid,
        where=or_(r.c.ref.is_not(None), s.c.booked < ctx.end),
        carried=carried(r.c.ref, s.c.booked, ctx, booked_late),
        webhooks=webhooks,
        # A refund the API does not stand behind: what was notified, and what the
        # statement debited of it.
        notified=r.c.amount_cents,
        booked=s.c.cents,
    )
