"""Movements: each Pix received and each refund sent, matched by key across what was
notified, what the API confirmed and what the statement booked."""

from __future__ import annotations

from sqlalchemy import (
    ColumnElement,
    String,
    and_,
    case,
    false,
    func,
    literal,
    select,
    true,
)
from sqlmodel import Session

from reconcile.db import table_of
from reconcile.matching.context import (
    RECEIVED,
    REFUND_SENT,
    RunContext,
    statement_lines,
)
from reconcile.matching.verdicts import Verdict, insert_verdicts
from reconcile.models import InboxItem, PixReceived, PixRefund, StatementEntry


def _source(webhooks: ColumnElement[int], polls: ColumnElement[int]) -> ColumnElement[str]:
    return case(
        (and_(webhooks > 0, polls > 0), "both"),
        (webhooks > 0, "webhook"),
        (polls > 0, "poll"),
        else_="statement",
    )


def match_received(session: Session, ctx: RunContext) -> None:
    P, inbox = table_of(PixReceived), table_of(InboxItem)
    p = (
        select(
            P.c.end_to_end_id.label("e2e"),
            P.c.amount_cents,
            P.c.confirmation,
            P.c.confirmed_amount_cents,
            P.c.inbox_item_id,
        )
        .where(ctx.within(func.coalesce(P.c.horario, P.c.created_at)))
        .subquery("p")
    )
    s = statement_lines(ctx, "end_to_end_id", "CREDIT", RECEIVED, label="e2e")
    R = table_of(PixRefund)
    refunded = (
        select(R.c.end_to_end_id.label("e2e"), func.sum(R.c.amount_cents).label("cents"))
        .where(R.c.status == "DEVOLVIDO")
        .group_by(R.c.end_to_end_id)
        .subquery("refunded")
    )
    ref = func.coalesce(p.c.e2e, s.c.e2e)
    joined = (
        p.join(s, p.c.e2e == s.c.e2e, full=True)
        .outerjoin(refunded, refunded.c.e2e == p.c.e2e)
        .outerjoin(inbox, inbox.c.key == literal("pix:", String) + ref)
    )
    webhooks = func.coalesce(inbox.c.webhook_count, 0)
    polls = func.coalesce(inbox.c.poll_count, 0)
    statement_differs = and_(s.c.e2e.is_not(None), s.c.cents != p.c.amount_cents)
    not_booked = and_(true() if ctx.statement_known else false(), s.c.e2e.is_(None))
    verdicts: list[Verdict] = [
        (
            p.c.e2e.is_(None),
            "missing_webhook",
            True,
            "booked in the statement, but neither notified nor found by polling",
        ),
        (
            p.c.confirmation == "unconfirmed_webhook",
            "unconfirmed_webhook",
            True,
            "notified, but the API does not know it (possible forgery)",
        ),
        (
            p.c.confirmation == "amount_mismatch",
            "amount_mismatch",
            True,
            "the API states another amount than the notification",
        ),
        (statement_differs, "amount_mismatch", True, "the statement booked another amount"),
        (
            refunded.c.cents > p.c.amount_cents,
            "amount_mismatch",
            True,
            "refunds settled exceed the Pix they refund",
        ),
        (
            p.c.confirmation == "pending",
            "pending",
            False,
            "waiting for the API to confirm it (inside the grace period)",
        ),
        (not_booked, "pending", False, "not in the statement yet"),
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
        expected=func.coalesce(p.c.confirmed_amount_cents, s.c.cents),
        actual=p.c.amount_cents,
        source=_source(webhooks, polls),
        inbox_item_id=func.coalesce(p.c.inbox_item_id, inbox.c.id),
        statement_id=s.c.sid,
    )


def match_refunds(session: Session, ctx: RunContext) -> None:
    R, S = table_of(PixRefund), table_of(StatementEntry)
    r = (
        select(
            func.coalesce(
                R.c.rtr_id, R.c.end_to_end_id + literal(":", String) + R.c.refund_id
            ).label("ref"),
            R.c.rtr_id,
            R.c.amount_cents,
            R.c.status,
            R.c.inbox_item_id,
        )
        .where(ctx.within(func.coalesce(R.c.settled_at, R.c.requested_at, R.c.updated_at)))
        .subquery("r")
    )
    s = statement_lines(
        ctx, "end_to_end_id", "DEBIT", REFUND_SENT, S.c.end_to_end_id.like("D%"), label="rtr"
    )
    ref = func.coalesce(r.c.ref, s.c.rtr)
    joined = r.join(s, r.c.rtr_id == s.c.rtr, full=True)
    verdicts: list[Verdict] = [
        (
            r.c.ref.is_(None),
            "missing_webhook",
            True,
            "a refund booked in the statement that was never notified nor polled",
        ),
        (
            and_(s.c.rtr.is_not(None), s.c.cents != r.c.amount_cents),
            "amount_mismatch",
            True,
            "the statement booked another refund amount",
        ),
        (r.c.status == "EM_PROCESSAMENTO", "pending", False, "refund still being processed"),
        (
            and_(
                r.c.status == "DEVOLVIDO",
                s.c.rtr.is_(None),
                true() if ctx.statement_known else false(),
            ),
            "pending",
            False,
            "refunded, not in the statement yet",
        ),
        (
            and_(r.c.status == "NAO_REALIZADO", s.c.rtr.is_not(None)),
            "status_mismatch",
            True,
            "notified as not made, but the statement booked it",
        ),
    ]
    insert_verdicts(
        session,
        ctx,
        "movement",
        ref,
        joined,
        verdicts,
        "refund notified and booked",
        expected=s.c.cents,
        actual=r.c.amount_cents,
        source=literal("webhook", String),
        inbox_item_id=r.c.inbox_item_id,
        statement_id=s.c.sid,
    )
