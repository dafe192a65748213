"""Pix credits notified by the accounts API (``RECEIVE``).

The Pix such a notification announces is judged with the Pix received, by its statement
line and the QR code API; the notification itself adds no money. What it can add is a
claim the provider does not stand behind: a credit it does not know (a forgery), another
amount than it states, or one never confirmed within the grace period. Judged nowhere,
such a claim would leave the day "all reconciled"; judged here, it is the day's exception.
A credit the provider confirmed is no verdict of its own: its Pix is one already.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, String, and_, func, literal, null, or_, select
from sqlmodel import Session

from reconcile.actions import CREDIT_REF
from reconcile.db import table_of
from reconcile.matching.context import RunContext
from reconcile.matching.verdicts import Verdict, insert_verdicts
from reconcile.models import AccountMovement, Confirmation


def match_notified_credits(session: Session, ctx: RunContext) -> None:
    M = table_of(AccountMovement)
    when = func.coalesce(M.c.provider_created_at, M.c.updated_at)
    m = (
        select(
            M.c.reference,
            M.c.amount_cents,
            M.c.confirmation,
            M.c.confirmed_amount_cents,
            M.c.updated_at,
            M.c.inbox_item_id,
        )
        .where(
            M.c.type == "RECEIVE",
            ctx.within(when),
            M.c.confirmation != Confirmation.CONFIRMED.value,
        )
        .subquery("credits")
    )
    pending = m.c.confirmation == Confirmation.PENDING.value
    verdicts: list[Verdict] = [
        (
            m.c.confirmation.in_(
                (Confirmation.UNCONFIRMED_WEBHOOK.value, Confirmation.UNVERIFIABLE.value)
            ),
            "unconfirmed_webhook",
            True,
            "a Pix notified by the accounts API (RECEIVE) that the provider does not know "
            "(possible forgery)",
        ),
        (
            m.c.confirmation == Confirmation.AMOUNT_MISMATCH.value,
            "amount_mismatch",
            True,
            "the accounts API notified this Pix with another amount than the provider states",
        ),
        (
            or_(
                m.c.confirmation == Confirmation.STATUS_MISMATCH.value,
                and_(pending, m.c.updated_at < ctx.confirmed_by),
            ),
            "unconfirmed_webhook",
            True,
            "a Pix notified by the accounts API (RECEIVE) that the provider has not confirmed",
        ),
        (
            pending,
            "pending",
            False,
            "a Pix notified by the accounts API, waiting for the provider to confirm it "
            "(inside the grace period)",
        ),
    ]
    insert_verdicts(
        session,
        ctx,
        "movement",
        literal(CREDIT_REF, String) + m.c.reference,
        m,
        verdicts,
        "a Pix notified by the accounts API, confirmed",
        expected=m.c.confirmed_amount_cents,
        actual=m.c.amount_cents,
        source=literal("webhook", String),
        inbox_item_id=m.c.inbox_item_id,
        statement_id=null().cast(BigInteger),
        # A credit the provider does not stand behind: what was notified, and nothing
        # moved by the notification itself (its Pix, if any, is judged with the Pix
        # received, by its statement line).
        notified=m.c.amount_cents,
        booked=null().cast(BigInteger),
    )
