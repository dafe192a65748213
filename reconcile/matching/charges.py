"""Expected payments (charges) of the day against the Pix paid for them, by txid. Only
money the API stands behind (confirmed) counts as paid: a Pix the API knows with another
amount than notified pays what the API states."""

from __future__ import annotations

from sqlalchemy import String, and_, case, func, literal, or_, select, true, union
from sqlalchemy.sql import FromClause
from sqlmodel import Session

from reconcile.db import dialect_of, table_of
from reconcile.matching.context import RunContext
from reconcile.matching.movements import pix_time, refund_time, refunds_made
from reconcile.matching.verdicts import Verdict, insert_verdicts
from reconcile.models import (
    ENDED_CHARGE_STATES,
    REMOVED_CHARGE_PREFIX,
    Confirmation,
    ExpectedPayment,
    PixReceived,
    PixRefund,
)

STATED = Confirmation.stated()


def match_charges(session: Session, ctx: RunContext) -> None:
    E, P, R = table_of(ExpectedPayment), table_of(PixReceived), table_of(PixRefund)
    # A charge belongs to every day that concerns it: the day it was created, the day it
    # falls due, and any day a Pix paid it. Each is found through an index of its own, so
    # the run reads the day's charges, not every charge the table keeps.
    day_pix = select(P.c.txid).where(ctx.within(pix_time(P)), P.c.txid.is_not(None))
    created = E.c.created_at_provider
    concerned = union(
        select(E.c.id).where(ctx.within(created)),
        select(E.c.id).where(E.c.due_date == ctx.day),
        # Only charges the first branch does not already hold: then the planner sees how
        # few those are and looks each one's txid up, instead of hashing every txid the
        # day's Pix carry (0.45 s of a 2.2 s matcher on the benchmark's day alone).
        select(E.c.id).where(
            or_(created < ctx.start, created >= ctx.end, created.is_(None)),
            E.c.txid.in_(day_pix),
        ),
    )
    # Read once, and only the columns the verdicts use: the charges are joined three
    # times below, and a charge's terms and payer details would be carried through each.
    expected = (
        select(
            E.c.kind,
            E.c.ref,
            E.c.txid,
            E.c.status,
            E.c.expires_at,
            E.c.payable_until,
            E.c.amount_cents,
            E.c.amount_due_cents,
            E.c.inbox_item_id,
            E.c.ended_seen_at,
            E.c.open_seen_at,
        )
        .where(E.c.id.in_(concerned))
        .cte("e")
    )
    txids = (
        select(expected.c.txid)
        .where(expected.c.txid.is_not(None))
        .distinct()
        # In the index's order: each lookup then lands next to the one before, 0.4 s for
        # the benchmark's 110,000 charges instead of 0.85 s in hash order.
        .order_by(expected.c.txid)
        .subquery()
    )
    # Every Pix that paid one of the day's charges by the day's end (a Pix of a later day
    # pays the charge on that day, so re-running this one later gives the same answer),
    # looked up charge by charge by its txid: matched as a whole, PostgreSQL hashes the
    # charges against every Pix of every day the table keeps. ``LATERAL … OFFSET 0``
    # keeps it a lookup there; SQLite joins row by row through the index anyway (and has
    # no ``LATERAL``).
    # The API's amount where it states another than the notification (docs/design.md
    # §1.5), as the movements matcher counts the Pix: the charge is paid by that.
    paying = case(
        (P.c.confirmation == Confirmation.AMOUNT_MISMATCH.value, P.c.confirmed_amount_cents),
        else_=P.c.amount_cents,
    )
    by_txid = select(
        P.c.end_to_end_id, paying.label("amount_cents"), P.c.confirmation, P.c.inbox_item_id
    ).where(pix_time(P) < ctx.end)
    found: FromClause
    if dialect_of(session) == "postgresql":
        found = by_txid.where(P.c.txid == txids.c.txid).offset(0).lateral("found")
        pairs = txids.join(found, true())
    else:
        found = by_txid.add_columns(P.c.txid.label("paid_txid")).subquery("found")
        pairs = txids.join(found, found.c.paid_txid == txids.c.txid)
    charged = (
        select(
            txids.c.txid,
            found.c.end_to_end_id,
            found.c.amount_cents,
            found.c.confirmation,
            found.c.inbox_item_id,
        )
        .select_from(pairs)
        .cte("charged")
    )
    paid = (
        select(
            charged.c.txid,
            func.count().label("n"),
            func.sum(charged.c.amount_cents).label("cents"),
            func.min(charged.c.inbox_item_id).label("item"),
        )
        .where(charged.c.confirmation.in_(STATED))
        .group_by(charged.c.txid)
        .subquery("paid")
    )
    made, made_cents = refunds_made(R)
    refunded = (
        select(charged.c.txid, func.sum(made_cents).label("cents"))
        .join(R, R.c.end_to_end_id == charged.c.end_to_end_id)
        .where(made, refund_time(R) < ctx.end)
        .group_by(charged.c.txid)
        .subquery("refunded")
    )
    joined = expected.outerjoin(paid, paid.c.txid == expected.c.txid).outerjoin(
        refunded, refunded.c.txid == expected.c.txid
    )
    ended_seen, open_seen = expected.c.ended_seen_at, expected.c.open_seen_at
    gone = or_(
        # Ended by the day's end: one seen open before it and removed (or cancelled…) only
        # after was open at it, and its day re-run later still says so. One stored ended
        # from the first, or with both states received after the day, is judged as it
        # stands: nothing says when it was open.
        and_(
            or_(
                expected.c.status.like(f"{REMOVED_CHARGE_PREFIX}%"),
                expected.c.status.in_(ENDED_CHARGE_STATES),
            ),
            or_(
                ended_seen.is_(None),
                open_seen.is_(None),
                ended_seen < ctx.end,
                open_seen >= ctx.end,
            ),
        ),
        # Judged as of the day's end: re-running a past day never expires it later. One
        # that expires at that very instant can no longer be paid (criacao + expiracao is
        # its end, as the provider counts it). A cobv is payable through the whole of its
        # last day, so the end of that day is the instant it expires: judged then, ``today``
        # is already the day after.
        and_(expected.c.kind == "cob", expected.c.expires_at <= ctx.as_of),
        and_(expected.c.kind == "cobv", expected.c.payable_until < ctx.today),
    )
    paid_cents = func.coalesce(paid.c.cents, 0)
    # A due-date charge owes its terms (fine, interest, abatement, discount) as of the day
    # it was paid; one not paid by the day's end owed its original amount then, whatever a
    # later payment made due.
    due_cents = case(
        (
            paid.c.n.is_not(None),
            func.coalesce(expected.c.amount_due_cents, expected.c.amount_cents),
        ),
        else_=expected.c.amount_cents,
    )
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
