"""Cash-outs of the day by idempotency key: what was notified or polled against what the
provider confirmed and the statement debited."""

from __future__ import annotations

from sqlalchemy import String, and_, false, func, literal, or_, select, true
from sqlmodel import Session

from reconcile.db import table_of
from reconcile.matching.context import PAYOUT, RunContext, statement_lines
from reconcile.matching.verdicts import Verdict, insert_verdicts
from reconcile.models import AccountMovement


def match_payouts(session: Session, ctx: RunContext) -> None:
    M = table_of(AccountMovement)
    key = func.coalesce(M.c.idempotency_key, M.c.reference)
    # TRANSFER, CASHOUT and REFUND notifications of one payout share its key; the latest
    # fact wins.
    ranked = (
        select(
            key.label("key"),
            M.c.status,
            M.c.amount_cents,
            M.c.confirmation,
            M.c.inbox_item_id,
            func.row_number().over(partition_by=key, order_by=M.c.rank.desc()).label("nth"),
        )
        .where(
            or_(
                M.c.type.in_(("TRANSFER", "CASHOUT")),
                # A REFUND of a payout carries its idempotency key (one of a Pix received
                # does not): it is the payout's latest state.
                and_(M.c.type == "REFUND", M.c.idempotency_key.is_not(None)),
            ),
            ctx.within(func.coalesce(M.c.provider_created_at, M.c.updated_at)),
        )
        .subquery("ranked")
    )
    m = select(ranked).where(ranked.c.nth == 1).subquery("m")
    s = statement_lines(ctx, "idempotency_key", "DEBIT", PAYOUT)
    joined = m.join(s, m.c.key == s.c.key, full=True)
    booked = s.c.key.is_not(None)
    statement = true() if ctx.statement_known else false()
    verdicts: list[Verdict] = [
        (
            m.c.key.is_(None),
            "missing_webhook",
            True,
            "debited in the statement, but no payout was notified or polled",
        ),
        (
            m.c.confirmation == "unconfirmed_webhook",
            "unknown_to_provider",
            True,
            "notified, but the provider does not know this payout",
        ),
        (
            m.c.confirmation == "amount_mismatch",
            "amount_mismatch",
            True,
            "the provider states another amount than the notification",
        ),
        (
            and_(m.c.status.in_(("REJECTED", "CANCELED")), booked),
            "status_mismatch",
            True,
            "notified as not paid, but the statement debited it",
        ),
        (m.c.status.in_(("REJECTED", "CANCELED")), "rejected", False, "not paid out"),
        (
            m.c.status.in_(("REFUNDED", "PARTIALLY_REFUNDED")),
            "refunded",
            False,
            "paid out, then returned",
        ),
        (m.c.status == "PROCESSING", "pending", False, "still processing"),
        (
            and_(booked, s.c.cents != m.c.amount_cents),
            "amount_mismatch",
            True,
            "the statement debited another amount",
        ),
        (and_(statement, s.c.key.is_(None)), "pending", False, "settled, not in the statement yet"),
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
    )
