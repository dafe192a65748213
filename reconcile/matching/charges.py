"""Expected payments (charges) of the day against the Pix paid for them, by txid. Only
money the API stands behind (confirmed) counts as paid."""

from __future__ import annotations

from sqlalchemy import String, and_, exists, func, literal, or_, select
from sqlmodel import Session

from reconcile.db import table_of
from reconcile.matching.context import RunContext
from reconcile.matching.verdicts import Verdict, insert_verdicts
from reconcile.models import Confirmation, ExpectedPayment, PixReceived, PixRefund

COUNTED = Confirmation.counted()


def match_charges(session: Session, ctx: RunContext) -> None:
    E, P, R = table_of(ExpectedPayment), table_of(PixReceived), table_of(PixRefund)
    # A charge belongs to every day that concerns it: the day it was created, the day it
    # falls due, and any day a Pix paid it. The last is asked charge by charge, by its
    # txid, and only of charges neither created nor due that day: a list of the day's
    # txids to look each charge up in has a million entries, too many to hash, and
    # searched from end to end for every charge it costs minutes.
    paid_today = exists().where(
        P.c.txid == E.c.txid, ctx.within(func.coalesce(P.c.horario, P.c.created_at))
    )
    expected = (
        select(E)
        .where(or_(ctx.within(E.c.created_at_provider), E.c.due_date == ctx.day, paid_today))
        .subquery("e")
    )
    paid = (
        select(
            P.c.txid,
            func.count().label("n"),
            func.sum(P.c.amount_cents).label("cents"),
            func.min(P.c.inbox_item_id).label("item"),
        )
        # Only the day's charges: the table holds every Pix of every day.
        .where(P.c.txid.in_(select(expected.c.txid)), P.c.confirmation.in_(COUNTED))
        .group_by(P.c.txid)
        .subquery("paid")
    )
    refunded = (
        select(P.c.txid, func.sum(R.c.amount_cents).label("cents"))
        .join(R, R.c.end_to_end_id == P.c.end_to_end_id)
        .where(R.c.status == "DEVOLVIDO", P.c.txid.is_not(None))
        .group_by(P.c.txid)
        .subquery("refunded")
    )
    joined = expected.outerjoin(paid, paid.c.txid == expected.c.txid).outerjoin(
        refunded, refunded.c.txid == expected.c.txid
    )
    gone = or_(
        expected.c.status.like("REMOVID%"),
        expected.c.status.in_(("EXPIRADA", "REJEITADA", "CANCELADA")),
        # Judged as of the day's end: re-running a past day never expires it later.
        and_(expected.c.kind == "cob", expected.c.expires_at < ctx.as_of),
        and_(expected.c.kind == "cobv", expected.c.payable_until < ctx.today),
    )
    paid_cents = func.coalesce(paid.c.cents, 0)
    # A due-date charge owes its terms (fine, interest, abatement, discount) as of the day
    # it was paid.
    due_cents = func.coalesce(expected.c.amount_due_cents, expected.c.amount_cents)
    refunded_cents = func.coalesce(refunded.c.cents, 0)
    invoice = expected.c.kind == "invoice"
    verdicts: list[Verdict] = [
        (
            and_(invoice, expected.c.status == "PAID"),
            "paid",
            False,
            "paid, on the provider's word (an invoice carries no txid to match)",
        ),
        (
            and_(invoice, expected.c.status.in_(("CANCELED", "OVERDUE"))),
            "expired",
            False,
            "canceled or overdue unpaid",
        ),
        (invoice, "unpaid", False, "not paid yet"),
        (and_(paid.c.n.is_(None), gone), "expired", False, "expired or removed unpaid"),
        (paid.c.n.is_(None), "unpaid", False, "no confirmed Pix for this txid yet"),
        (refunded_cents >= paid_cents, "refunded", False, "paid, then refunded in full"),
        # A refund is the merchant settling the matter (returning a duplicate or an
        # overpayment), so it outranks how the charge was paid.
        (refunded_cents > 0, "partially_refunded", False, "paid, then partly refunded"),
        (paid.c.n > 1, "paid_twice", True, "more than one Pix paid this charge"),
        (paid_cents < due_cents, "underpaid", True, "paid less than was due"),
        (paid_cents > due_cents, "overpaid", True, "paid more than was due"),
    ]
    insert_verdicts(
        session,
        ctx,
        "charge",
        expected.c.kind + literal(":", String) + expected.c.ref,
        joined,
        verdicts,
        "paid exactly, confirmed by the API",
        default_status="paid",
        expected=due_cents,
        actual=paid.c.cents,
        source=literal("poll", String),
        inbox_item_id=func.coalesce(paid.c.item, expected.c.inbox_item_id),
        statement_id=literal(None),
    )
