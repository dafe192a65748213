"""Cash-outs of the day by idempotency key: what was notified or polled against what the
provider confirmed — by status and amount — and what the statement debited. Only a payout
the provider stands behind is money out; a forged or unconfirmed one is an exception.

A payout's returns (the receiver sending money back) are movements of the day each
happened (``payout_return``): a payout is judged on its own day as it stood at that day's
end, and each return on its day against the statement's credit for it."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    String,
    and_,
    case,
    func,
    literal,
    null,
    or_,
    select,
    union,
)
from sqlalchemy.sql import FromClause
from sqlmodel import Session

from reconcile import actions
from reconcile.db import table_of
from reconcile.matching.context import (
    PAYOUT,
    PAYOUT_REFUND,
    RunContext,
    in_categories,
    items_of,
    statement_lines,
)
from reconcile.matching.movements import booking_verdicts, carried, source_of
from reconcile.matching.verdicts import Verdict, insert_verdicts
from reconcile.models import (
    AccountMovement,
    Confirmation,
    InboxItem,
    PayoutReturn,
    StatementEntry,
)

NOT_PAID = ("REJECTED", "CANCELED")
RETURNED = ("REFUNDED", "PARTIALLY_REFUNDED")
PAID_OUT = ("LIQUIDATED", *RETURNED)


def payout_key(M: FromClause) -> ColumnElement[str]:
    return func.coalesce(M.c.idempotency_key, M.c.reference)


def payout_time(M: FromClause) -> ColumnElement[datetime]:
    """The day a payout belongs to: when its money moved — its Pix's initiation when that
    came after the payout was created (a scheduled Pix), else its creation."""
    return func.coalesce(M.c.moved_at, M.c.provider_created_at, M.c.updated_at)


def is_payout(M: FromClause) -> ColumnElement[bool]:
    return or_(
        M.c.type.in_(("TRANSFER", "CASHOUT")),
        # A REFUND of a payout carries its idempotency key (one of a Pix received does
        # not): it is the payout's latest state.
        and_(M.c.type == "REFUND", M.c.idempotency_key.is_not(None)),
    )


RETURN_REF = actions.RETURN_REF
"""The ``ref`` of a return's verdict: ``return:`` and the return's endToEndId."""

DISPUTED = (
    Confirmation.UNCONFIRMED_WEBHOOK.value,
    Confirmation.STATUS_MISMATCH.value,
    Confirmation.AMOUNT_MISMATCH.value,
)
"""A notification of a payout the provider's API denies or contradicts."""


def stated_by_api(M: FromClause) -> ColumnElement[bool]:
    """A row whose notified status the provider's API contradicts, kept with the status
    the API states (``confirmed_status``): the notification replaced the state the API had
    confirmed (one row per type and reference, and an outcome ranks alike whatever it is),
    so the row stands for both — the API's state, which counts, and the notification,
    the payout's exception (``_disputed``)."""
    return and_(
        M.c.confirmation == Confirmation.STATUS_MISMATCH.value, M.c.confirmed_status.is_not(None)
    )


def counted_status(M: FromClause) -> ColumnElement[str]:
    """A payout row's status as it counts: the API's where it contradicts the notified one."""
    return case((stated_by_api(M), M.c.confirmed_status), else_=M.c.status)


def return_cents(X: FromClause) -> ColumnElement[int]:
    """What a return counts for: the API's word once it stated one, else as notified."""
    return func.coalesce(X.c.confirmed_amount_cents, X.c.amount_cents)


def _returned(ctx: RunContext) -> FromClause:
    """Per payout key, what its returns had given back by the day's end. A key without
    any return of its own has no row: a payout stored before returns were kept apart,
    whose row's sum stands. Returns are few, so all of them are summed at once."""
    X = table_of(PayoutReturn)
    made = and_(X.c.returned_at < ctx.end, or_(X.c.status.is_(None), X.c.status.not_in(NOT_PAID)))
    return (
        select(
            X.c.payout_key.label("key"),
            func.sum(case((made, func.coalesce(return_cents(X), 0)), else_=0)).label("cents"),
        )
        .group_by(X.c.payout_key)
        .subquery("returned")
    )


def payout_line_key() -> ColumnElement[str]:
    """What a payout's statement debit is keyed by: its idempotencyKey; a line that carries
    only an endToEndId, by the key of the payout notified with that endToEndId, else by the
    endToEndId itself (unmatched, still a payout the day must explain)."""
    S, M = table_of(StatementEntry), table_of(AccountMovement).alias("by_e2e")
    notified = (
        select(payout_key(M))
        .where(M.c.end_to_end_id == S.c.end_to_end_id, is_payout(M))
        .order_by(M.c.id)
        .limit(1)
        .scalar_subquery()
    )
    return func.coalesce(S.c.idempotency_key, notified, S.c.end_to_end_id)


def _debited_before(
    key: ColumnElement[str], end_to_end_id: ColumnElement[str | None], bound: datetime
) -> ColumnElement[bool]:
    """Whether the statement debited the payout before ``bound``, by either of its keys."""
    S = table_of(StatementEntry)
    return (
        select(S.c.id)
        .where(
            or_(S.c.idempotency_key == key, S.c.end_to_end_id == end_to_end_id),
            S.c.type == "DEBIT",
            in_categories(S.c.category, PAYOUT),
            S.c.booked_at < bound,
        )
        .exists()
    )


def _listening(since: ColumnElement[datetime], until: datetime) -> ColumnElement[bool]:
    """Whether pixrecon received anything between ``since`` and ``until``: only then does a
    payout first heard of after its day say that the day, as it stood, knew nothing of it.
    A day played or loaded later than it happened received everything after it, and is
    judged as its states stand."""
    inbox = table_of(InboxItem)
    return (
        select(inbox.c.id).where(inbox.c.received_at >= since, inbox.c.received_at < until).exists()
    )


def _heard_of(M: FromClause, *where: ColumnElement[bool]) -> FromClause:
    """Per payout key among ``where``'s rows: when pixrecon first heard of it (``None``
    when a row stored before that was kept says nothing), its endToEndId, its time."""
    key = payout_key(M)
    return (
        select(
            key.label("key"),
            case(
                (func.count(M.c.first_seen_at) == func.count(), func.min(M.c.first_seen_at)),
                else_=null(),
            ).label("first_seen_at"),
            func.max(M.c.end_to_end_id).label("e2e"),
            func.min(payout_time(M)).label("at"),
        )
        .where(is_payout(M), *where)
        .group_by(key)
        .subquery("heard_of")
    )


def _first_heard_late(ctx: RunContext) -> FromClause:
    """The keys of the day's payouts pixrecon first heard of only after the day's date lag
    ended, while it was listening, and that the statement had not debited by then: the day
    as it stood at its end knew nothing of them, so they are not its (asked at its end,
    it would not have judged them; asked later, it must answer the same). The day they
    were first heard of judges them (``_over_later``)."""
    M = table_of(AccountMovement)
    heard = _heard_of(M, ctx.within(payout_time(M)))
    return (
        select(heard.c.key)
        .where(
            heard.c.first_seen_at >= ctx.statement_end,
            ~_debited_before(heard.c.key, heard.c.e2e, ctx.statement_end),
            _listening(heard.c.at, ctx.statement_end),
        )
        .subquery("first_heard_late")
    )


def _over_later(ctx: RunContext) -> FromClause:
    """The keys of payouts of earlier days whose outcome came in this day (past the
    earlier day's date lag) after they were seen processing before it, paid out and not
    debited by then: their own day judged them still processing, so this day judges
    their money. And those first heard of in this day at all (``_first_heard_late``),
    whatever their state: their own day left them to this one."""
    M = table_of(AccountMovement)
    key = payout_key(M)
    since = ctx.start + ctx.judging.date_lag
    seen_processing = select(key.label("key")).where(
        M.c.outcome_seen_at >= since,
        M.c.outcome_seen_at < ctx.statement_end,
        M.c.processing_seen_at < since,
        is_payout(M),
        counted_status(M).in_(PAID_OUT),
        payout_time(M) < ctx.start,
        ~_debited_before(key, M.c.end_to_end_id, since),
    )
    # Every row of each payout a row of which was first heard of today: one heard of
    # before (a CASHOUT after its TRANSFER) makes it no payout first heard of today.
    recent = M.alias("recent")
    heard_today = select(payout_key(recent)).where(
        is_payout(recent),
        recent.c.first_seen_at >= since,
        recent.c.first_seen_at < ctx.statement_end,
    )
    heard = _heard_of(M, payout_time(M) < ctx.start, payout_key(M).in_(heard_today))
    first_heard = select(heard.c.key).where(
        heard.c.first_seen_at >= since,
        heard.c.first_seen_at < ctx.statement_end,
        ~_debited_before(heard.c.key, heard.c.e2e, since),
        _listening(heard.c.at, since),
    )
    return union(seen_processing, first_heard).subquery("over_later")


def _stood_processing(ctx: RunContext) -> FromClause:
    """The keys of the day's payouts seen processing by the end of the day's date lag
    whose outcome came only after it, and that the statement had not debited by then.
    Both are times of receipt: a day loaded or played after it happened received every
    state after its end, and is judged by the states as they stand."""
    M = table_of(AccountMovement)
    key = payout_key(M)
    return (
        select(key.label("key"))
        .where(
            M.c.outcome_seen_at >= ctx.statement_end,
            M.c.processing_seen_at < ctx.statement_end,
            is_payout(M),
            ctx.within(payout_time(M)),
            ~_debited_before(key, M.c.end_to_end_id, ctx.statement_end),
        )
        .subquery("stood_processing")
    )


def _disputed() -> FromClause:
    """Per payout key, a notification of it the provider's API denies or contradicts:
    its confirmation, the status and amount it stated. Few rows, found by the
    confirmation's index, and looked up apart rather than carried through the ranking's
    sort (``latest_payouts``)."""
    M = table_of(AccountMovement)
    key = payout_key(M)
    return (
        select(
            key.label("key"),
            func.max(M.c.confirmation).label("confirmation"),
            func.max(M.c.status).label("status"),
            func.max(M.c.amount_cents).label("cents"),
        )
        .where(M.c.confirmation.in_(DISPUTED), is_payout(M))
        .group_by(key)
        .subquery("disputed")
    )


def latest_payouts(ctx: RunContext) -> FromClause:
    """The day's payouts, each in its latest known state as of the day's end (the
    notifications of one payout share its key). The state is the latest one the provider's
    API does not deny or contradict: a rejection (``CASHOUT``) and a settlement
    (``TRANSFER``) rank alike, and the API says which one holds; a row a notification it
    contradicts replaced counts as the state the API states (``stated_by_api``). A
    notification it denies or contradicts is never dropped for that: the payout carries
    it (``disputed``), and its day judges it (``match_payouts``). A return made after the
    day's end is not that day's: its notification is left out, and a payout returned
    later counts as it stood then, settled. A payout seen processing whose outcome came
    only after the day's date lag, and that the statement had not debited by then, stood
    processing: the day its outcome came judges its money (``_over_later``). A Pix
    created in the day and scheduled for a later one stood processing too
    (``scheduled``: its line, if one falls in the date lag, is the day it moved's, not
    matched here)."""
    M = table_of(AccountMovement)
    key = payout_key(M)
    returned = _returned(ctx)
    later = _over_later(ctx)
    heard_late = _first_heard_late(ctx)
    scheduled = and_(ctx.within(M.c.provider_created_at), M.c.moved_at >= ctx.end)
    disputed = case((M.c.confirmation.in_(DISPUTED), 1), else_=0)
    # A row whose notification the API contradicts, kept with what the API states: the
    # API's state is its word, and counts as one it confirmed. Such a row still ranks
    # after one the API confirmed as notified.
    api_states = stated_by_api(M)
    ranked = (
        select(
            key.label("key"),
            counted_status(M).label("status"),
            case(
                (api_states, func.coalesce(M.c.confirmed_amount_cents, M.c.amount_cents)),
                else_=M.c.amount_cents,
            ).label("amount_cents"),
            M.c.refunded_cents,
            returned.c.cents.label("returned"),
            case(
                (api_states, literal(Confirmation.CONFIRMED.value, String)),
                else_=M.c.confirmation,
            ).label("confirmation"),
            M.c.inbox_item_id,
            M.c.updated_at,
            ctx.within(payout_time(M)).label("own_day"),
            scheduled.label("scheduled"),
            # Ties broken by the row written last, so that both engines keep the same one.
            func.row_number()
            .over(partition_by=key, order_by=(disputed.asc(), M.c.rank.desc(), M.c.id.desc()))
            .label("nth"),
            # What the payout was for, as the API confirmed it, else as any notification of
            # it stated: a rejection (a CASHOUT) seldom repeats the amount, and finance must
            # see what did not go out. Not as a notification the API contradicts states it,
            # but as the API does where it stated its own.
            func.max(
                case(
                    (disputed == 0, func.coalesce(M.c.confirmed_amount_cents, M.c.amount_cents)),
                    (api_states, M.c.confirmed_amount_cents),
                )
            )
            .over(partition_by=key)
            .label("stated_cents"),
        )
        .select_from(M.outerjoin(returned, returned.c.key == key))
        .where(
            is_payout(M),
            or_(
                and_(ctx.within(payout_time(M)), ~key.in_(select(heard_late.c.key))),
                scheduled,
                key.in_(select(later.c.key)),
            ),
            # The notification of a return that came after the day's end.
            ~and_(M.c.type == "REFUND", func.coalesce(returned.c.cents, -1) == 0),
        )
        .subquery("ranked")
    )
    r = ranked
    flagged = _disputed()
    kept_apart = and_(r.c.status.in_(RETURNED), r.c.returned.is_not(None))
    # Looked up apart, among the few rows with an outcome seen late: carried through the
    # ranking's sort, its columns made that sort spill to disk.
    over_later = r.c.key.in_(select(_stood_processing(ctx).c.key))
    return (
        select(
            r.c.key,
            case(
                (or_(r.c.scheduled, and_(r.c.own_day, over_later)), literal("PROCESSING", String)),
                (and_(kept_apart, r.c.returned == 0), literal("LIQUIDATED", String)),
                (
                    and_(kept_apart, r.c.returned < r.c.amount_cents),
                    literal("PARTIALLY_REFUNDED", String),
                ),
                (kept_apart, literal("REFUNDED", String)),
                else_=r.c.status,
            ).label("status"),
            r.c.amount_cents,
            func.coalesce(r.c.stated_cents, r.c.amount_cents).label("stated_cents"),
            func.coalesce(r.c.returned, r.c.refunded_cents).label("refunded_cents"),
            r.c.confirmation,
            r.c.inbox_item_id,
            r.c.updated_at,
            # Its returns are rows of their own (``day_returns`` counts them on their days).
            r.c.returned.is_not(None).label("returns_apart"),
            func.coalesce(r.c.scheduled, False).label("scheduled"),
            r.c.own_day,
            # A notification of it the API denies or contradicts, when its state is another.
            flagged.c.confirmation.label("disputed"),
            flagged.c.status.label("disputed_status"),
            flagged.c.cents.label("disputed_cents"),
        )
        .select_from(r.outerjoin(flagged, flagged.c.key == r.c.key))
        .where(r.c.nth == 1)
        .subquery("m")
    )


def day_returns(ctx: RunContext) -> FromClause:
    """The payout returns made in the day: as notified (``notified_cents``), and as they
    count (``amount_cents``: the API's word once it stated one). The provider stands
    behind a return its API listed; else when it stands behind the payout's latest state
    that lists it (of two alike, the one it disputes: what it does not stand behind does
    not count)."""
    X, M = table_of(PayoutReturn), table_of(AccountMovement)
    key = payout_key(M)
    today = ctx.within(X.c.returned_at)
    disputed = case((M.c.confirmation.in_(DISPUTED), 1), else_=0)
    states = (
        select(
            key.label("key"),
            M.c.confirmation,
            M.c.updated_at,
            func.row_number()
            .over(partition_by=key, order_by=(M.c.rank.desc(), disputed.desc(), M.c.id.desc()))
            .label("nth"),
        )
        .where(is_payout(M), key.in_(select(X.c.payout_key).where(today)))
        .subquery("states")
    )
    return (
        select(
            X.c.ref,
            func.coalesce(X.c.end_to_end_id, X.c.ref).label("e2e"),
            X.c.status,
            X.c.amount_cents.label("notified_cents"),
            return_cents(X).label("amount_cents"),
            X.c.confirmed_amount_cents.label("api_cents"),
            X.c.inbox_item_id,
            case(
                (X.c.confirmed_amount_cents.is_not(None), Confirmation.CONFIRMED.value),
                else_=states.c.confirmation,
            ).label("confirmation"),
            states.c.updated_at,
        )
        .select_from(X.outerjoin(states, and_(states.c.key == X.c.payout_key, states.c.nth == 1)))
        .where(today)
        .subquery("x")
    )


def _contradicted(
    confirmation: ColumnElement[str],
    status: ColumnElement[str],
    api_status: ColumnElement[str] | None = None,
) -> list[Verdict]:
    """A notification whose outcome the provider's API contradicts (``STATUS_MISMATCH``),
    in words of what each said: the notification's ``status`` is what it claimed, and
    ``api_status`` (where known) what the API states."""
    mismatch = confirmation == Confirmation.STATUS_MISMATCH.value
    ahead: list[Verdict] = []
    if api_status is not None:
        # An outcome notified while the API still has the payout in progress.
        ahead.append(
            (
                and_(
                    mismatch,
                    status.in_((*PAID_OUT, *NOT_PAID)),
                    api_status.not_in((*PAID_OUT, *NOT_PAID)),
                ),
                "status_mismatch",
                True,
                "a notification gave this payout an outcome the provider's API does not "
                f"state: {actions.API_STILL_PROCESSING} (possible forgery): nothing of the "
                "notification counts until the API states it",
            )
        )
    return [
        *ahead,
        (
            and_(mismatch, status.in_(RETURNED)),
            "status_mismatch",
            True,
            "a notification said this payout came back, but the provider's API does not "
            "(possible forgery): no return of it counts unless the API lists it",
        ),
        (
            and_(mismatch, status.in_(PAID_OUT)),
            "status_mismatch",
            True,
            f"{actions.API_SAYS_NOT_PAID} (rejected or canceled), but a notification said it "
            "was settled (possible forgery): do not count it",
        ),
        (
            and_(mismatch, status.in_(NOT_PAID)),
            "status_mismatch",
            True,
            f"{actions.API_SAYS_PAID}, but a notification said it was rejected or canceled "
            "(possible forgery)",
        ),
        (
            mismatch,
            "status_mismatch",
            True,
            "the provider's API states another outcome than a notification (possible forgery)",
        ),
    ]


def match_payouts(session: Session, ctx: RunContext) -> None:
    m = latest_payouts(ctx)
    s = statement_lines(ctx, payout_line_key(), "DEBIT", PAYOUT)
    inbox = table_of(InboxItem)
    joined = m.join(s, and_(m.c.key == s.c.key, ~m.c.scheduled), full=True).outerjoin(
        inbox, items_of(session, inbox, m.c.inbox_item_id)
    )
    booked = s.c.key.is_not(None)
    # A payout of an earlier day the statement debited only today: within the date lag,
    # one of the day before (counted there, carried out); past it, its own day says it was
    # not debited in time. Here its line is explained, not a payout nobody notified.
    # Looked up by key for the lines no payout of the day matched only.
    late = table_of(AccountMovement).alias("late")

    def earlier(when: ColumnElement[bool]) -> ColumnElement[bool]:
        found = select(late.c.id).where(
            # Each side by an index: the key's own, and (type, reference)'s unique one.
            or_(
                late.c.idempotency_key == s.c.key,
                and_(late.c.type.in_(("TRANSFER", "CASHOUT")), late.c.reference == s.c.key),
            ),
            is_payout(late),
            when,
        )
        return and_(m.c.key.is_(None), found.exists())

    booked_late = earlier(payout_time(late) < ctx.start)
    carried_in = and_(ctx.in_lag(s.c.booked), earlier(ctx.before(payout_time(late))))
    pending = m.c.confirmation == Confirmation.PENDING.value
    moves_money = m.c.status.in_(PAID_OUT)
    not_paid = and_(m.c.status.in_(NOT_PAID), ~booked, m.c.key.is_not(None))
    # Judged by a notification the API disputes while its state is another: what that
    # notification claimed, against what the statement debited.
    flagged = and_(m.c.disputed.is_not(None), m.c.confirmation.not_in(DISPUTED))
    verdicts: list[Verdict] = [
        (carried_in, "settled", False, "paid out the day before and debited today (carried in)"),
        (
            booked_late,
            "settled",
            False,
            "paid out on an earlier day and debited only today, past the date lag (carried "
            "in; its own day says it was not debited in time)",
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
        *_contradicted(m.c.confirmation, m.c.status),
        # Its state is one the API stands behind, and a notification of it the API
        # denies or contradicts is the day's all the same.
        *_contradicted(m.c.disputed, m.c.disputed_status, m.c.status),
        (
            m.c.disputed == Confirmation.AMOUNT_MISMATCH.value,
            "amount_mismatch",
            True,
            "a notification of this payout states another amount than the provider's API "
            "(possible forgery): only the API's counts",
        ),
        (
            m.c.disputed == Confirmation.UNCONFIRMED_WEBHOOK.value,
            "status_mismatch",
            True,
            "a notification of this payout that the provider's API does not stand behind "
            "(possible forgery): only the state the API states counts",
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
        (
            ~m.c.own_day,
            "settled",
            False,
            "paid out on an earlier day, where it was still processing: settled and debited today",
        ),
        # Part of it is still out: "refunded" would tell finance it all came back.
        (
            m.c.status == "PARTIALLY_REFUNDED",
            "partially_refunded",
            False,
            "paid out, then partly returned",
        ),
        (m.c.status.in_(RETURNED), "refunded", False, "paid out, then returned in full"),
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
        # A payout that did not go out: what it was for, and nothing moved.
        # A notification the API contradicts on a payout that did not go out: what it
        # claimed, and nothing moved — so that a sum of ``actual`` is money that moved.
        expected=case(
            (and_(flagged, not_paid), func.coalesce(m.c.disputed_cents, m.c.amount_cents)),
            (flagged, s.c.cents),
            (not_paid, m.c.stated_cents),
            else_=s.c.cents,
        ),
        actual=case(
            # A debit nobody notified moved as booked (an earlier day's payout's, not here).
            (and_(m.c.key.is_(None), ~booked_late), s.c.cents),
            (not_paid, literal(0, BigInteger)),
            # A rejection seldom states an amount: then the payout's own.
            (flagged, func.coalesce(m.c.disputed_cents, m.c.amount_cents)),
            else_=m.c.amount_cents,
        ),
        # How its latest state came: a payout whose notifications were lost is polled.
        source=source_of(
            func.coalesce(inbox.c.webhook_count, 0), func.coalesce(inbox.c.poll_count, 0)
        ),
        inbox_item_id=m.c.inbox_item_id,
        statement_id=s.c.sid,
        where=or_(m.c.key.is_not(None), s.c.booked < ctx.end),
        carried=carried(m.c.key, s.c.booked, ctx, booked_late),
        # A payout the provider does not know: what was notified, and what the statement
        # debited of it.
        notified=m.c.amount_cents,
        booked=s.c.cents,
    )


def match_payout_returns(session: Session, ctx: RunContext) -> None:
    """Each return of the day against the statement's credit for it (``PIX_PAYMENT_REFUND``,
    keyed by the return's endToEndId). A return is money in, a movement like a Pix
    received: judged in the movements' words, apart from the payouts (whose outcomes are
    money out)."""
    S, X, inbox = table_of(StatementEntry), table_of(PayoutReturn), table_of(InboxItem)
    x = day_returns(ctx)
    # A line that names no return of its own is keyed by its payout: unmatched, it is
    # still this day's exception, never a line nobody looks at.
    line_key = func.coalesce(S.c.end_to_end_id, S.c.idempotency_key, S.c.original_end_to_end_id)
    s = statement_lines(ctx, line_key, "CREDIT", PAYOUT_REFUND)
    joined = x.join(s, x.c.e2e == s.c.key, full=True).outerjoin(
        inbox, items_of(session, inbox, x.c.inbox_item_id)
    )
    # A return of an earlier day credited only today, as for the payouts themselves.
    late = X.alias("late")

    def earlier(when: ColumnElement[bool]) -> ColumnElement[bool]:
        found = select(late.c.id).where(
            func.coalesce(late.c.end_to_end_id, late.c.ref) == s.c.key, when
        )
        return and_(x.c.ref.is_(None), found.exists())

    booked_late = earlier(late.c.returned_at < ctx.start)
    carried_in = and_(ctx.in_lag(s.c.booked), earlier(ctx.before(late.c.returned_at)))
    webhooks = func.coalesce(inbox.c.webhook_count, 0)
    polls = func.coalesce(inbox.c.poll_count, 0)
    booked = s.c.key.is_not(None)
    pending = x.c.confirmation == Confirmation.PENDING.value
    # What the notification said the return gave back, against what the API states.
    notified = case((x.c.status.in_(NOT_PAID), 0), else_=x.c.notified_cents)
    contradicted = and_(x.c.api_cents.is_not(None), notified != x.c.api_cents)
    verdicts: list[Verdict] = [
        (
            carried_in,
            "matched",
            False,
            "a payout return of the day before, credited today (carried in)",
        ),
        (
            booked_late,
            "matched",
            False,
            "a payout return of an earlier day, credited only today, past the date lag "
            "(carried in; its own day says it was not credited in time)",
        ),
        (
            x.c.ref.is_(None),
            "missing_webhook",
            True,
            "credited in the statement as a payout return, but no return was notified or polled",
        ),
        (
            contradicted,
            "amount_mismatch",
            True,
            "a notification states another amount for this payout return "
            + actions.STATED_OTHERWISE
            + " (possible forgery): only the API's amount counts",
        ),
        (
            or_(
                x.c.confirmation.is_(None),
                x.c.confirmation.in_(
                    (Confirmation.UNCONFIRMED_WEBHOOK.value, Confirmation.UNVERIFIABLE.value)
                ),
            ),
            "unknown_to_provider",
            True,
            "a return notified, but the provider does not stand behind its payout: do not count it",
        ),
        (
            x.c.confirmation == Confirmation.AMOUNT_MISMATCH.value,
            "amount_mismatch",
            True,
            "the provider states another amount for the payout this return belongs to",
        ),
        (
            x.c.confirmation == Confirmation.STATUS_MISMATCH.value,
            "status_mismatch",
            True,
            "the provider states another outcome for the payout this return belongs to",
        ),
        (
            and_(x.c.status.in_(NOT_PAID), booked),
            "status_mismatch",
            True,
            "a return notified as not made, but the statement credited it",
        ),
        (x.c.status.in_(NOT_PAID), "matched", False, "a payout return not made: no money moved"),
        (
            and_(pending, x.c.updated_at < ctx.confirmed_by),
            "unconfirmed_webhook",
            True,
            "a payout return not confirmed by the provider within the grace period: do not "
            "count it",
        ),
        (
            pending,
            "pending",
            False,
            "a payout return waiting for the provider to confirm it (inside the grace period)",
        ),
        (
            and_(booked, s.c.cents != x.c.amount_cents),
            "amount_mismatch",
            True,
            "the statement credited another amount for this payout return",
        ),
        *booking_verdicts(ctx, booked, "a payout return"),
        (
            webhooks == 0,
            "missing_webhook",
            False,
            "a payout return found by polling only: no webhook came",
        ),
    ]
    insert_verdicts(
        session,
        ctx,
        "movement",
        literal(RETURN_REF, String) + func.coalesce(x.c.e2e, s.c.key),
        joined,
        verdicts,
        "a payout return, notified and credited",
        # Contradicted: what the API states, against what was notified.
        expected=case((contradicted, x.c.api_cents), else_=s.c.cents),
        actual=case(
            # A credit nobody notified moved as booked (an earlier day's return's, not here).
            (and_(x.c.ref.is_(None), ~booked_late), s.c.cents),
            (contradicted, notified),
            else_=x.c.amount_cents,
        ),
        source=source_of(webhooks, polls),
        inbox_item_id=x.c.inbox_item_id,
        statement_id=s.c.sid,
        where=or_(x.c.ref.is_not(None), s.c.booked < ctx.end),
        carried=carried(x.c.ref, s.c.booked, ctx, booked_late),
        # A return the provider does not stand behind: what was notified, and what the
        # statement credited of it.
        notified=x.c.amount_cents,
        booked=s.c.cents,
    )
