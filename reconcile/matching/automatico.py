"""Pix Automático: a recurring charge (``cobr``) is collected by debit attempts. A rejected
attempt is news a person must act on — unless the charge's retry policy still allows
attempts, in which case it is pending until its last retry window closes. A cycle of a
recurrence with no charge due within it is a missed cycle. Every state counted is the one
the provider's API states; a notification it does not stand behind is an exception of its
own (docs/design.md §1.5).

Runs after the charges matcher, over the few recurring charges it judged unpaid or
expired; their retry policy and attempts are the ``terms`` stored with each charge."""

from __future__ import annotations

import json
from calendar import monthrange
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import String, and_, case, insert, literal, or_, select, update
from sqlmodel import Session

from reconcile import actions
from reconcile.db import table_of
from reconcile.matching.context import RunContext
from reconcile.models import (
    Confirmation,
    DeniedClaim,
    ExpectedPayment,
    InboxItem,
    ReconciliationItem,
    Recurrence,
    RecurringCharge,
)
from reconcile.priorities import EXCEPTION_PRIORITY
from reconcile.rejections import rejection_in_words
from reconcile.timeutil import as_utc, business_day_bounds

# The BCB's retry policies: attempts allowed in all, and the days after the due date
# within which retries may happen.
POLICIES: dict[str, tuple[int, int]] = {"NAO_PERMITE": (1, 0), "PERMITE_3R_7D": (4, 7)}
FAILED = ("REJEITADA", "NAO_REALIZADA")


def _terms(raw: str | None) -> dict[str, Any]:
    try:
        found = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _day_end(day: date) -> datetime:
    return business_day_bounds(day)[1]


def _attempted_by(attempt: dict[str, Any], day: date) -> bool:
    """Whether a debit attempt was made by ``day`` (its ``dataLiquidacao``, kept as
    ``data``); one without a readable date is taken as made."""
    try:
        return date.fromisoformat(str(attempt.get("data"))[:10]) <= day
    except ValueError:
        return True


def judge_recurring_charges(session: Session, ctx: RunContext) -> None:
    items, charges = table_of(ReconciliationItem), table_of(ExpectedPayment)
    rows = session.execute(
        select(items.c.id, charges.c.status, charges.c.due_date, charges.c.terms)
        .join(charges, (charges.c.kind == "cobr") & (items.c.ref == "cobr:" + charges.c.ref))
        .where(
            items.c.run_id == ctx.run_id,
            items.c.subject == "charge",
            items.c.status.in_(("unpaid", "expired")),
        )
    ).all()
    for item_id, status, due_date, raw_terms in rows:
        terms = _terms(raw_terms)
        listed = [a for a in terms.get("tentativas") or [] if isinstance(a, dict)]
        # As the charge stood at the day's end: a later day's attempt is that day's news,
        # and a charge closed by it was still open here.
        attempts = [a for a in listed if _attempted_by(a, ctx.day)]
        if len(attempts) < len(listed) and status in FAILED:
            status = None
        failed = [a for a in attempts if a.get("status") in FAILED]
        if not failed and status not in FAILED:
            continue
        code = (terms.get("rejeicao") if status in FAILED else None) or next(
            (a.get("codigo") for a in reversed(failed) if a.get("codigo")), None
        )
        why = f"the payer's bank rejected the debit: {rejection_in_words(code)}"
        allowed, window_days = POLICIES.get(str(terms.get("politicaRetentativa")), (1, 0))
        last_window = (due_date or ctx.day) + timedelta(days=window_days)
        retry = status not in FAILED and len(attempts) < allowed and ctx.today <= last_window
        values: dict[str, Any]
        if retry:
            values = {
                "status": "pending",
                "exception": False,
                "priority": None,
                "due_at": _day_end(last_window),
                "reason": f"{why}; the retry policy allows {allowed - len(attempts)} more "
                f"attempt(s) until {last_window.strftime('%d/%m/%Y')}",
            }
        else:
            values = {
                "status": "unpaid",
                "exception": True,
                "priority": 2,
                "reason": f"{why}, and no attempt is left: ask the payer to pay otherwise",
            }
        session.execute(update(items).where(items.c.id == item_id).values(**values))


CYCLE_NAMES = {
    "SEMANAL": "weekly",
    "MENSAL": "monthly",
    "TRIMESTRAL": "quarterly",
    "SEMESTRAL": "half-yearly",
    "ANUAL": "yearly",
}
# Months between two cycles; a week is counted in days.
_MONTHS = {"MENSAL": 1, "TRIMESTRAL": 3, "SEMESTRAL": 6, "ANUAL": 12}


def cycle_on_or_before(start: date, periodicity: str, day: date) -> tuple[date, date] | None:
    """The recurrence's cycle due on or before ``day`` and the next one's date, counted
    from ``calendario.dataInicial`` (a monthly cycle started on the 31st falls on the last
    day of shorter months)."""
    if day < start:
        return None
    if periodicity == "SEMANAL":
        cycle = start + timedelta(days=(day - start).days // 7 * 7)
        return cycle, cycle + timedelta(days=7)
    months = _MONTHS.get(periodicity)
    if months is None:
        return None

    def nth(n: int) -> date:
        total = start.month - 1 + n * months
        year, month = start.year + total // 12, total % 12 + 1
        return date(year, month, min(start.day, monthrange(year, month)[1]))

    n = ((day.year - start.year) * 12 + day.month - start.month) // months
    while nth(n) > day:
        n -= 1
    return nth(n), nth(n + 1)


def _charged(session: Session, id_rec: str, due: date, following: date, by: datetime) -> bool:
    """Whether a recurring charge of the recurrence, created ``by`` then, falls due within
    the cycle, from its date up to the day before the next one: the BCB counts a charge in
    the cycle its ``dataDeVencimento`` falls in (it refuses a second one due in the same
    cycle), so one due days after the cycle's date still collects it. The charge names its
    recurrence in its own terms (polled) or in its collection state (notified)."""
    charges, cobrs = table_of(ExpectedPayment), table_of(RecurringCharge)
    # Only a charge the API stands behind names its recurrence: a forged notification
    # naming another recurrence's charge must not make this cycle look charged.
    notified = select(cobrs.c.txid).where(
        cobrs.c.id_rec == id_rec, cobrs.c.confirmation.in_(Confirmation.counted())
    )
    rows = session.execute(
        select(charges.c.ref.in_(notified), charges.c.terms).where(
            charges.c.kind == "cobr",
            charges.c.due_date >= due,
            charges.c.due_date < following,
            or_(charges.c.created_at_provider < by, charges.c.created_at_provider.is_(None)),
        )
    ).all()
    return any(known or _terms(terms).get("idRec") == id_rec for known, terms in rows)


def judge_missed_cycles(session: Session, ctx: RunContext) -> None:
    """A cycle of an approved recurrence that falls on the day with no recurring charge due
    within it: the merchant's system never asked for the money, and nobody will pay it.
    Judged on the cycle's own date only, so each cycle is raised once, by the day it
    belongs to (a charge due the next business day after a weekend counts), and as things
    stood at its end: a recurrence cancelled after it was still approved then, one
    approved after it was not yet, and a charge created after it came too late for the
    cycle. The recurrence's state is the one the API states (``confirmed_status``): a
    notification of a cancellation the API does not stand behind hides no cycle."""
    recs = table_of(Recurrence)
    stated, stated_at = recs.c.confirmed_status, recs.c.confirmed_status_at
    found = session.execute(
        select(
            recs.c.id_rec,
            recs.c.start_date,
            recs.c.end_date,
            recs.c.periodicity,
            recs.c.amount_cents,
            recs.c.inbox_item_id,
            recs.c.confirmation,
        ).where(
            or_(
                # Approved by the day's end: a payer who approves after a cycle's date did
                # not owe that cycle at its end, and the day must answer as it did then.
                and_(stated == "APROVADA", or_(stated_at.is_(None), stated_at < ctx.end)),
                # Only an approved recurrence is cancelled (one never approved is rejected
                # or expires): cancelled after the day, it was approved at its end.
                and_(stated == "CANCELADA", stated_at >= ctx.end),
            ),
            recs.c.start_date <= ctx.day,
            recs.c.periodicity.is_not(None),
        )
    ).all()
    missed: list[dict[str, Any]] = []
    for id_rec, start, end, periodicity, amount, inbox_item_id, confirmation in found:
        cycle = cycle_on_or_before(start, periodicity, ctx.day)
        if cycle is None or cycle[0] != ctx.day or (end is not None and end < ctx.day):
            continue
        due, following = cycle
        if _charged(session, id_rec, due, following, ctx.end):
            continue
        missed.append(
            {
                "run_id": ctx.run_id,
                "subject": "recurrence",
                "ref": f"rec:{id_rec}:{due.isoformat()}",
                "status": "missed_cycle",
                "exception": True,
                "reason": f"the {CYCLE_NAMES.get(periodicity, periodicity)} cycle due "
                f"{due.strftime('%d/%m/%Y')} has no recurring charge: nothing will be "
                "debited; create the charge for the next cycle and ask the payer about "
                "this one",
                "expected_cents": amount,
                "source": "poll",
                # What decided it is the API's state and the charge that is not there: the
                # recurrence's latest notification only when the API stands behind it (a
                # cancellation it denies decided nothing, and is its own exception).
                "inbox_item_id": (
                    inbox_item_id if confirmation in Confirmation.counted() else None
                ),
                "priority": EXCEPTION_PRIORITY,
            }
        )
    if missed:
        session.execute(insert(table_of(ReconciliationItem)), missed)


def _claimed_on(table: Any, ctx: RunContext) -> Any:
    """The day a notification is about: the time it gives its state, never later than it
    arrived (a notification cannot announce what has not happened yet; a forged one dated
    in the future would otherwise be judged on no day anyone runs)."""
    received = table_of(InboxItem).c.received_at
    stated = table.c.status_at
    return ctx.within(case((or_(stated.is_(None), stated > received), received), else_=stated))


# The BCB's states in words finance reads; the raw state follows in parentheses, as the
# provider's screens and support name it.
REC_STATES = {
    "CRIADA": "awaiting the payer's approval",
    "APROVADA": "approved by the payer",
    "REJEITADA": "refused by the payer",
    "EXPIRADA": "expired before the payer approved it",
    "CANCELADA": "cancelled",
}
_COBR_STATES = {
    "CRIADA": "created",
    "ATIVA": "awaiting its debit",
    "CONCLUIDA": "paid",
    "EXPIRADA": "expired unpaid",
    "REJEITADA": "rejected, not debited",
    "CANCELADA": "cancelled",
}
_ATTEMPT_STATES = {
    "SOLICITADA": "requested",
    "AGENDADA": "scheduled",
    "PAGA": "paid",
    "CANCELADA": "cancelled",
    "REJEITADA": "rejected by the payer's bank",
    "EXPIRADA": "expired",
    "NAO_REALIZADA": "not made",
}


def in_words(states: dict[str, str], raw: str) -> str:
    """``paid (CONCLUIDA)``; a state the BCB does not list, as it came."""
    words = states.get(raw)
    return f"{words} ({raw})" if words else raw


def _claim_verdict(
    confirmation: str, updated_at: datetime, ctx: RunContext
) -> tuple[str, bool, str] | None:
    """Status, exception, and the start of the reason, for a notification not counted."""
    if confirmation == Confirmation.PENDING.value:
        if as_utc(updated_at) < ctx.confirmed_by:
            return (
                "unconfirmed_webhook",
                True,
                f"{actions.API_HAS_NOT_CONFIRMED} within the grace period",
            )
        return "pending", False, "waiting for the provider's API to confirm it"
    if confirmation == Confirmation.STATUS_MISMATCH.value:
        return "status_mismatch", True, actions.API_CONTRADICTS
    if confirmation == Confirmation.UNVERIFIABLE.value:
        return "unconfirmed_webhook", True, "it names an id the provider cannot have issued"
    if confirmation == Confirmation.UNCONFIRMED_WEBHOOK.value:
        return "unconfirmed_webhook", True, actions.API_DOES_NOT_KNOW
    return None


# What a notification claimed, as the verdict on it reads it.
_Claim = tuple[str, str | None, str, datetime, int, int | None, str | None, str | None]


def _denied_on(session: Session, ctx: RunContext) -> dict[str, _Claim]:
    """The notifications about the day the API denied, kept as they were when denied
    (``denied_claim``): a later notification of the same object, genuine, takes over its
    row, and the day must answer as it did. The day's first denied notification of each
    object is its verdict (the verdict's ``ref`` is the object's)."""
    claims = table_of(DeniedClaim)
    found: dict[str, _Claim] = {}
    rows = session.execute(
        select(
            claims.c.kind,
            claims.c.key,
            claims.c.status,
            claims.c.confirmed_status,
            claims.c.confirmation,
            claims.c.denied_at,
            claims.c.inbox_item_id,
            claims.c.amount_cents,
            claims.c.attempt_status,
            claims.c.attempt_end_to_end_id,
        )
        .where(ctx.within(claims.c.claimed_at))
        .order_by(claims.c.id)
    ).all()
    for kind, key, *claim in rows:
        found.setdefault(f"{kind}:{key}", tuple(claim))
    return found


def _pending_on(session: Session, ctx: RunContext) -> list[tuple[str, _Claim]]:
    """The notifications about the day still waiting for the API's look-up, from the rows
    that hold them."""
    recs, cobrs, inbox = table_of(Recurrence), table_of(RecurringCharge), table_of(InboxItem)
    charges = table_of(ExpectedPayment)
    found: list[tuple[str, _Claim]] = []
    for table, key, amount, joined in (
        (recs, recs.c.id_rec, recs.c.amount_cents, recs),
        (
            cobrs,
            cobrs.c.txid,
            charges.c.amount_cents,
            cobrs.outerjoin(charges, (charges.c.kind == "cobr") & (charges.c.ref == cobrs.c.txid)),
        ),
    ):
        attempt = getattr(table.c, "last_attempt_status", None)
        e2e = getattr(table.c, "last_attempt_end_to_end_id", None)
        rows = session.execute(
            select(
                key,
                table.c.status,
                table.c.confirmed_status,
                table.c.confirmation,
                table.c.updated_at,
                table.c.inbox_item_id,
                amount,
                attempt if attempt is not None else literal(None, String),
                e2e if e2e is not None else literal(None, String),
            )
            .select_from(joined.join(inbox, inbox.c.id == table.c.inbox_item_id))
            .where(table.c.confirmation == Confirmation.PENDING.value, _claimed_on(table, ctx))
        ).all()
        prefix = "rec" if table is recs else "cobr"
        found.extend((f"{prefix}:{ref}", tuple(claim)) for ref, *claim in rows)
    return found


def judge_notified_claims(session: Session, ctx: RunContext) -> None:
    """Each recurrence and recurring charge notified that the provider's API does not
    stand behind: unknown to it, in a state it says the object never was in, or not yet
    confirmed. Such a notification moves no money and changes no verdict (the matchers
    count the API's state), but a notification the API denies may be a forgery — someone
    holding the webhook's credentials, or a provider's mistake — and a person must know.
    Judged on the day the notification is about; few rows, read one by one. One the API
    denied is the object's verdict that day whatever came after it; one still waiting
    is, unless another of the day was denied."""
    denied = _denied_on(session, ctx)
    claims = list(denied.items()) + [c for c in _pending_on(session, ctx) if c[0] not in denied]
    rows: list[dict[str, Any]] = []
    for ref, claim in claims:
        status, stated, confirmation, updated_at, item_id, cents, tried, at = claim
        verdict = _claim_verdict(confirmation, updated_at, ctx)
        if verdict is None:
            continue
        is_rec = ref.startswith("rec:")
        what, states = ("recurrence", REC_STATES) if is_rec else ("recurring charge", _COBR_STATES)
        last = (
            f", its last attempt {in_words(_ATTEMPT_STATES, tried)} with endToEndId {at}"
            if tried and at
            else ""
        )
        notified = f"a {what} notified as {in_words(states, status)}{last}"
        rows.append(
            {
                "run_id": ctx.run_id,
                "subject": "recurrence",
                "ref": ref,
                "status": verdict[0],
                "exception": verdict[1],
                "reason": _claim_reason(notified, verdict, stated, status, states),
                "expected_cents": cents,
                "source": "webhook",
                "inbox_item_id": item_id,
                "priority": EXCEPTION_PRIORITY if verdict[1] else None,
            }
        )
    if rows:
        session.execute(insert(table_of(ReconciliationItem)), rows)


def _claim_reason(
    notified: str,
    verdict: tuple[str, bool, str],
    stated: str | None,
    status: str,
    states: dict[str, str],
) -> str:
    """What the notification said, what the API says, and why it matters."""
    name, _, why = verdict
    if name == "pending":
        return f"{notified}: {why} (inside the grace period)"
    if stated is None:
        api = ""
    elif name == "status_mismatch" and stated == status:
        # The same state, but not the attempt (or the recurrence) the notification named.
        api = (
            f": it states it is {in_words(states, stated)} too, but not with the attempt or "
            "recurrence notified"
        )
    else:
        api = f": it states it is {in_words(states, stated)}"
    return (
        f"{notified}, but {why}{api}. A notification the API does not stand behind may be "
        "forged: nothing of it is counted, only the state the API states"
    )
