"""Day totals per source, and the balance drift from the provider's statement."""

from __future__ import annotations

from typing import Any

from sqlalchemy import case, func, select
from sqlmodel import Session

from reconcile.matching.context import RunContext, table
from reconcile.models import (
    AccountMovement,
    BalanceSnapshot,
    InboxItem,
    PixReceived,
    PixRefund,
    StatementEntry,
)


def _cents(value: Any) -> int:
    return int(value or 0)


def day_totals(session: Session, ctx: RunContext) -> dict[str, Any]:
    """Credits, debits and refunds in centavos as each source tells them: webhooks, polling
    (the API), and the statement."""
    P, R, M, S = (table(m) for m in (PixReceived, PixRefund, AccountMovement, StatementEntry))
    inbox = table(InboxItem)
    counted = P.c.confirmation.in_(("confirmed", "not_required"))
    credits = session.execute(
        select(
            func.sum(case((inbox.c.webhook_count > 0, P.c.amount_cents), else_=0)),
            func.sum(case((inbox.c.poll_count > 0, P.c.amount_cents), else_=0)),
        )
        .select_from(P.join(inbox, inbox.c.id == P.c.inbox_item_id))
        .where(counted, ctx.within(func.coalesce(P.c.horario, P.c.created_at)))
    ).one()
    refunds = session.execute(
        select(func.sum(R.c.amount_cents)).where(
            R.c.status == "DEVOLVIDO",
            ctx.within(func.coalesce(R.c.settled_at, R.c.requested_at, R.c.updated_at)),
        )
    ).scalar_one()
    payouts = session.execute(
        select(func.sum(M.c.amount_cents)).where(
            M.c.type == "TRANSFER",
            M.c.status.in_(("LIQUIDATED", "REFUNDED", "PARTIALLY_REFUNDED")),
            ctx.within(func.coalesce(M.c.provider_created_at, M.c.updated_at)),
        )
    ).scalar_one()
    statement = session.execute(
        select(
            func.sum(case((S.c.type == "CREDIT", S.c.amount_cents), else_=0)),
            func.sum(case((S.c.type == "DEBIT", S.c.amount_cents), else_=0)),
            func.sum(case((S.c.category == "PIX_REFUND_SENT", S.c.amount_cents), else_=0)),
        ).where(ctx.within(S.c.booked_at))
    ).one()
    # Webhooks only ever tell of Pix received; payouts and refunds are counted from the
    # rows the API stands behind (notified and confirmed, or polled).
    return {
        "credits": {
            "webhook": _cents(credits[0]),
            "poll": _cents(credits[1]),
            "statement": _cents(statement[0]),
        },
        "debits": {"api": _cents(payouts), "statement": _cents(statement[1])},
        "refunds": {"api": _cents(refunds), "statement": _cents(statement[2])},
    }


def balance_drift(session: Session, ctx: RunContext) -> dict[str, Any]:
    """opening + credits - debits - closing, from the statement's running balance and
    the balance readings. Non-zero means lines are missing from what was polled (or the
    provider's books disagree with themselves)."""
    S, B = table(StatementEntry), table(BalanceSnapshot)
    signed = case((S.c.type == "CREDIT", S.c.amount_cents), else_=-S.c.amount_cents)
    lines = (
        select(S.c.balance_after_cents, signed.label("signed"))
        .where(ctx.within(S.c.booked_at), S.c.balance_after_cents.is_not(None))
        .order_by(S.c.booked_at, S.c.id)
    )
    first = session.execute(lines.limit(1)).first()
    last = session.execute(
        lines.order_by(None).order_by(S.c.booked_at.desc(), S.c.id.desc()).limit(1)
    ).first()
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
    if first is None or last is None:
        return {
            "opening_cents": opening_reading,
            "closing_cents": None,
            "drift_cents": None,
            "note": "no statement lines for the day",
        }
    opening = opening_reading if opening_reading is not None else first[0] - first[1]
    closing = int(last[0])
    drift = int(opening) + _cents(credits) - _cents(debits) - closing
    return {
        "opening_cents": int(opening),
        "closing_cents": closing,
        "drift_cents": drift,
        "note": None,
    }
