"""Cash-outs of the day by idempotency key: what was notified or polled against what the
provider confirmed — by status and amount — and what the statement debited. Only a payout
the provider stands behind is money out; a forged or unconfirmed one is an exception."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ColumnElement, String, and_, func, literal, or_, select
from sqlalchemy.sql import FromClause
from sqlmodel import Session

from reconcile.db import table_of
from reconcile.matching.context import PAYOUT, RunContext, statement_lines
from reconcile.matching.movements import booking_verdicts, carried
from reconcile.matching.verdicts import Verdict, insert_verdicts
from reconcile.models import AccountMovement, Confirmation

NOT_PAID = ("REJECTED", "CANCELED")
RETURNED = ("REFUNDED", "PARTIALLY_REFUNDED")
PAID_OUT = ("LIQUIDATED", *RETURNED)


def payout_key(M: FromClause) -> ColumnElement[str]:
    return func.coalesce(M.c.idempotency_key, M.c.reference)


def payout_time(M: FromClause) -> ColumnElement[datetime]:
    return func.coalesce(M.c.provider_created_at, M.c.updated_at)


def is_payout(M: FromClause) -> ColumnElement[bool]:
    return or_(
        M.c.type.in_(("TRANSFER", "CASHOUT")),
        # A REFUND of a payout carries its idempotency key (one of a Pix received does
        # not): it is the payout's latest state.
        and_(M.c.type == "REFUND", M.c.idempotency_key.is_not(None)),
    )


def latest_payouts(ctx: RunContext) -> FromClause:
    """The day's payouts, each in its latest known state (the notifications of one payout
    share its key)."""
    M = table_of(AccountMovement)
    key = payout_key(M)
    ranked = (
        select(
            key.label("key"),
            M.c.status,
            M.c.amount_cents,
            M.c.refunded_cents,
            M.c.confirmation,
            M.c.inbox_item_id,
            M.c.updated_at,
            func.row_number().over(partition_by=key, order_by=M.c.rank.desc()).label("nth"),
        )
        .where(is_payout(M), ctx.within(payout_time(M)))
        .subquery("ranked")
    )
    return select(ranked).where(ranked.c.nth == 1).subquery("m")


def match_payouts(session: Session, ctx: RunContext) -> None:
    M = table_of(AccountMovement)
    m = latest_payouts(ctx)
    s = statement_lines(ctx, "idempotency_key", "DEBIT", PAYOUT)
    earlier = (
        select(payout_key(M).label("key"))
        .where(is_payout(M), ctx.before(payout_time(M)))
        .distinct()
        .subquery()
    )
    joined = m.join(s, m.c.key == s.c.key, full=True).outerjoin(earlier, earlier.c.key == s.c.key)
    booked = s.c.key.is_not(None)
    pending = m.c.confirmation == Confirmation.PENDING.value
    moves_money = m.c.status.in_(PAID_OUT)
    verdicts: list[Verdict] = [
        (
            and_(m.c.key.is_(None), earlier.c.key.is_not(None)),
            "settled",
            False,
            "paid out the day before and debited today (carried in)",
        ),
        (
            m.c.key.is_(None),
            "missing_webhook",
            True,
            "debited in the statement, but no payout was notified or polled",
        ),
        (
            m.c.confirmation == Confirmation.UNCONFIRMED_WEBHOOK.value,
            "unknown_to_provider",
            True,
            "notified, but the provider does not know this payout: do not count it",
        ),
        (
            m.c.confirmation == Confirmation.UNVERIFIABLE.value,
            "unknown_to_provider",
            True,
            "notified without an idempotencyKey or endToEndId: the provider cannot be asked",
        ),
        (
            m.c.confirmation == Confirmation.AMOUNT_MISMATCH.value,
            "amount_mismatch",
            True,
            "the provider states another amount than the notification",
        ),
        (
            m.c.confirmation == Confirmation.STATUS_MISMATCH.value,
            "status_mismatch",
            True,
            "the provider states another outcome than the notification",
        ),
        (
            and_(m.c.status.in_(NOT_PAID), booked),
            "status_mismatch",
            True,
            "notified as not paid, but the statement debited it",
        ),
        (m.c.status.in_(NOT_PAID), "rejected", False, "not paid out"),
        (
            and_(pending, m.c.updated_at < ctx.confirmed_by),
            "unknown_to_provider",
            True,
            "not confirmed by the provider within the grace period: do not count it",
        ),
        (
            and_(pending, moves_money),
            "pending",
            False,
            "waiting for the provider to confirm it (inside the grace period)",
        ),
        (m.c.status == "PROCESSING", "pending", False, "still processing"),
        (
            and_(booked, s.c.cents != m.c.amount_cents),
            "amount_mismatch",
            True,
            "the statement debited another amount",
        ),
        *booking_verdicts(ctx, booked, "paid out"),
        (m.c.status.in_(RETURNED), "refunded", False, "paid out, then returned"),
    ]
    insert_verdicts(
        session,
        ctx,
        "payout",
        func.coalesce(m.c.key, s.c.key),
        joined,
        verdicts,
        "settled and debited",
        default_status="settled",
        expected=s.c.cents,
        actual=m.c.amount_cents,
        source=literal("webhook", String),
        inbox_item_id=m.c.inbox_item_id,
        statement_id=s.c.sid,
        where=or_(m.c.key.is_not(None), s.c.booked < ctx.end),
        carried=carried(m.c.key, s.c.booked, ctx),
    )
