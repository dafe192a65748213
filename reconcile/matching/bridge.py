"""The bridge: the day explained from the opening to the closing balance, by category, each
with the webhook, API and statement figures of the same thing; and the statement lines
nobody explains, as exceptions.

A category's statement figure is what the provider booked in the day; its API figure is
the money of the day's movements the provider stands behind (confirmed by look-up, or
listed by polling). Movements booked across midnight (the date lag) make the two differ
by what is carried in from the day before and carried out to the next; what remains
(``difference``) is explained item by item by the day's exceptions. The ``residual`` —
opening balance plus every explained line, less the closing balance — is what nothing
explains; it must be 0 for the day to be ``reconciled``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Date,
    Integer,
    String,
    and_,
    case,
    func,
    insert,
    literal,
    or_,
    select,
)
from sqlalchemy.sql import FromClause
from sqlmodel import Session

from reconcile import actions
from reconcile.db import table_of
from reconcile.formats import brl
from reconcile.matching.context import (
    FEE,
    INFRACTION_DEBIT,
    MED_NATURES,
    PAYOUT,
    PAYOUT_REFUND,
    RECEIVED,
    REFUND_SENT,
    RunContext,
    in_categories,
    items_of,
)
from reconcile.matching.infractions import api_debit, case_of_line
from reconcile.matching.judgement import is_pending
from reconcile.matching.movements import api_states_made, pix_time, refund_time
from reconcile.matching.payouts import (
    NOT_PAID,
    PAID_OUT,
    RETURN_REF,
    RETURNED,
    day_returns,
    latest_payouts,
)
from reconcile.matching.verdicts import COLUMNS
from reconcile.models import (
    Confirmation,
    InboxItem,
    Infraction,
    PixReceived,
    PixRefund,
    ReconciliationItem,
    StatementEntry,
)
from reconcile.priorities import EXCEPTION_PRIORITY

# (category, label, sign: +1 credit / -1 debit), in the order the report shows them.
CATEGORIES: tuple[tuple[str, str, int], ...] = (
    ("pix_received", "Pix received", 1),
    ("refunds_sent", "refunds sent", -1),
    ("payouts", "payouts", -1),
    ("payout_returns", "payout returns", 1),
    ("med_debits", "MED debits", -1),
    ("fees", "fees", -1),
    ("other", "other (unexplained)", 0),
)


def _line_category(
    S: FromClause, med: ColumnElement[bool], med_case: ColumnElement[Any]
) -> ColumnElement[str]:
    """Which category a statement line is, when the key its matcher needs is there;
    ``other`` otherwise."""
    credit, debit = S.c.type == "CREDIT", S.c.type == "DEBIT"
    e2e, key = S.c.end_to_end_id, S.c.idempotency_key
    return case(
        (and_(debit, S.c.category.in_(FEE)), literal("fees", String)),
        (
            and_(credit, in_categories(S.c.category, RECEIVED), e2e.is_not(None), ~e2e.like("D%")),
            literal("pix_received", String),
        ),
        (
            and_(debit, in_categories(S.c.category, REFUND_SENT), e2e.like("D%"), med),
            literal("med_debits", String),
        ),
        (
            and_(debit, in_categories(S.c.category, REFUND_SENT), e2e.like("D%")),
            literal("refunds_sent", String),
        ),
        (
            # Whatever the payouts matcher keys the line by.
            and_(
                debit, in_categories(S.c.category, PAYOUT), or_(key.is_not(None), e2e.is_not(None))
            ),
            literal("payouts", String),
        ),
        (
            and_(
                credit,
                in_categories(S.c.category, PAYOUT_REFUND),
                # Whatever the returns matcher keys the line by.
                or_(e2e.is_not(None), key.is_not(None), S.c.original_end_to_end_id.is_not(None)),
            ),
            literal("payout_returns", String),
        ),
        (
            and_(debit, in_categories(S.c.category, INFRACTION_DEBIT), med_case.is_not(None)),
            literal("med_debits", String),
        ),
        else_=literal("other", String),
    )


def _day_lines(ctx: RunContext) -> FromClause:
    S, R = table_of(StatementEntry), table_of(PixRefund)
    med_rtr = select(R.c.rtr_id).where(R.c.natureza.in_(MED_NATURES), R.c.rtr_id.is_not(None))
    return (
        select(
            S.c.id,
            S.c.entry_id,
            S.c.type,
            S.c.category,
            S.c.amount_cents,
            func.coalesce(S.c.fee_cents, 0).label("fee_cents"),
            _line_category(
                S,
                S.c.end_to_end_id.in_(med_rtr),
                # Only MED lines look for their case (a CASE evaluates only its branch).
                case((S.c.category.in_(INFRACTION_DEBIT), case_of_line()), else_=None),
            ).label("bridge"),
        )
        .where(ctx.within(S.c.booked_at))
        .subquery("lines")
    )


def match_statement_lines(session: Session, ctx: RunContext) -> None:
    """Every statement line of the day is matched to a movement (the other matchers), a
    fee, or it is an exception here: a line nobody explains."""
    lines = _day_lines(ctx)
    rows = select(
        literal(ctx.run_id, Integer),
        literal("statement", String),
        lines.c.entry_id,
        literal("unexplained", String),
        literal(True),
        literal("a statement line nobody explains (category ", String)
        + func.coalesce(lines.c.category, literal("none", String))
        + literal("): ask the provider what it is", String),
        literal(None, Integer),
        lines.c.amount_cents,
        literal("statement", String),
        literal(None, Integer),
        lines.c.id,
        literal(None, String),
        literal(None, Integer),
        literal(None, Date),
        literal(EXCEPTION_PRIORITY, Integer),
        literal(None, Integer),
    ).where(lines.c.bridge == "other")
    session.execute(
        table_of(ReconciliationItem).insert().from_select(COLUMNS, rows.order_by(lines.c.entry_id))
    )


def _cents(value: Any) -> int:
    return int(value or 0)


def _statement_by_category(session: Session, ctx: RunContext) -> dict[str, int]:
    lines = _day_lines(ctx)
    found: dict[str, int] = {}
    for bridge, amount, fees in session.execute(
        select(
            lines.c.bridge, func.sum(lines.c.amount_cents), func.sum(lines.c.fee_cents)
        ).group_by(lines.c.bridge)
    ):
        # A fee netted from a credit line is part of the Pix received (gross) and a fee.
        found[bridge] = found.get(bridge, 0) + _cents(amount) + _cents(fees)
        if fees:
            found["fees"] = found.get("fees", 0) + _cents(fees)
    return found


def _webhook_and_api(
    session: Session,
    rows: FromClause,
    amounts: list[ColumnElement[Any]],
    inbox_id: ColumnElement[Any],
    confirmation: ColumnElement[Any],
    stated: list[ColumnElement[Any]] | None = None,
    notified: list[ColumnElement[Any]] | None = None,
    contradicted: list[ColumnElement[Any]] | None = None,
) -> list[tuple[int, int]]:
    """Per amount of ``rows``: what was notified by webhook and what the API stands
    behind, all read in one pass over the rows and their items. The API stands behind a
    row it confirmed, or listed when polled; a notification trusted without a look-up
    (``PIXRECON_CONFIRM_POLICY=none``) counts in the day's verdicts, by that choice, but
    is not the API's word, and the API column must not say it is. ``stated`` (one per
    amount): what the API states for a row it knows with another amount
    (``amount_mismatch``); the API column counts that, as the matchers do, not the
    notified amount nor nothing. ``notified`` (one per amount): what webhooks said, where
    a row stands for the API's state and a notification it contradicts alike (payouts);
    by default the amount itself. ``contradicted`` (one per amount): what the API states
    for a row whose notified outcome it contradicts (``status_mismatch``, refunds): the
    API's outcome counts, not the notification's; by default nothing."""
    inbox = table_of(InboxItem)
    counted = or_(
        confirmation == Confirmation.CONFIRMED.value,
        and_(confirmation == Confirmation.NOT_REQUIRED.value, inbox.c.poll_count > 0),
    )
    disputed = confirmation == Confirmation.AMOUNT_MISMATCH.value
    denied = confirmation == Confirmation.STATUS_MISMATCH.value

    def api(
        amount: ColumnElement[Any],
        says: ColumnElement[Any] | None,
        outcome: ColumnElement[Any] | None,
    ) -> ColumnElement[Any]:
        whens: list[tuple[ColumnElement[bool], ColumnElement[Any]]] = [(counted, amount)]
        if says is not None:
            whens.append((disputed, says))
        if outcome is not None:
            whens.append((denied, outcome))
        return case(*whens, else_=0)

    nothing: list[ColumnElement[Any] | None] = [None] * len(amounts)
    statements = list(stated) if stated else nothing
    outcomes = list(contradicted) if contradicted else nothing
    said = list(notified) if notified else amounts
    sums = session.execute(
        select(
            *(
                func.sum(figure)
                for amount, says, told, outcome in zip(
                    amounts, statements, said, outcomes, strict=True
                )
                for figure in (
                    case((inbox.c.webhook_count > 0, told), else_=0),
                    api(amount, says, outcome),
                )
            )
        ).select_from(rows.outerjoin(inbox, items_of(session, inbox, inbox_id)))
    ).one()
    return [(_cents(sums[i]), _cents(sums[i + 1])) for i in range(0, len(sums), 2)]


def _carried(session: Session, ctx: RunContext, subject: str, like: str) -> tuple[int, int]:
    items = table_of(ReconciliationItem)
    carried_in, carried_out = session.execute(
        select(
            func.sum(case((items.c.carried == "in", items.c.expected_cents), else_=0)),
            func.sum(case((items.c.carried == "out", items.c.actual_cents), else_=0)),
        ).where(
            items.c.run_id == ctx.run_id,
            # Implied by the sums; said so that the carried items' own index serves them.
            items.c.carried.is_not(None),
            items.c.subject == subject,
            items.c.ref.like(like),
        )
    ).one()
    return _cents(carried_in), _cents(carried_out)


@dataclass(frozen=True)
class SourceFigures:
    """The bridge's figures read from the source tables alone, never from the run's
    verdicts: what the statement booked per category, and per category what was notified
    by webhook and what the provider's API stands behind. They can be read on a
    connection of their own while the matchers write (``reconcile.matching.parallel``)."""

    statement: dict[str, int]
    webhook_and_api: dict[str, tuple[int | None, int | None]]


def source_figures(session: Session, ctx: RunContext) -> SourceFigures:
    P, R, F = (table_of(m) for m in (PixReceived, PixRefund, Infraction))
    statement = _statement_by_category(session, ctx)
    figures: dict[str, tuple[int | None, int | None]] = {}

    pix = select(P).where(ctx.within(pix_time(P))).subquery()
    (figures["pix_received"],) = _webhook_and_api(
        session,
        pix,
        [pix.c.amount_cents],
        pix.c.inbox_item_id,
        pix.c.confirmation,
        stated=[pix.c.confirmed_amount_cents],
    )
    # Refunds notified as made, and those notified otherwise that the API states made: the
    # webhook column counts the first as notified, the API column each as the API states
    # it (``refunds_made``) — one it denies gave nothing back, one it states made did.
    notified_made = R.c.status == "DEVOLVIDO"
    api_made = api_states_made(R)
    refunds = (
        select(R, notified_made.label("notified_made"), api_made.label("api_made"))
        .where(ctx.within(refund_time(R)), or_(notified_made, api_made))
        .subquery()
    )
    med = refunds.c.natureza.in_(MED_NATURES)
    told = case((refunds.c.notified_made, refunds.c.amount_cents), else_=0)
    # The API states the outcome, not the amount, of a refund it contradicts
    # (``take_api_states``): it gave what was asked for.
    states_made = case(
        (
            refunds.c.api_made,
            func.coalesce(refunds.c.confirmed_amount_cents, refunds.c.amount_cents),
        ),
        else_=0,
    )
    figures["refunds_sent"], med_refunds = _webhook_and_api(
        session,
        refunds,
        [case((med, 0), else_=told), case((med, told), else_=0)],
        refunds.c.inbox_item_id,
        refunds.c.confirmation,
        # A refund the API states for another amount: what it states left the account.
        stated=[
            case((med, 0), else_=refunds.c.confirmed_amount_cents),
            case((med, refunds.c.confirmed_amount_cents), else_=0),
        ],
        contradicted=[case((med, 0), else_=states_made), case((med, states_made), else_=0)],
    )
    payouts = latest_payouts(ctx)
    figures["payouts"], returned_before = _webhook_and_api(
        session,
        payouts,
        [
            case((payouts.c.status.in_(PAID_OUT), payouts.c.amount_cents), else_=0),
            # Payouts stored before returns were kept apart: their row's sum, on their day.
            case(
                (
                    and_(payouts.c.status.in_(RETURNED), ~payouts.c.returns_apart),
                    payouts.c.refunded_cents,
                ),
                else_=0,
            ),
        ],
        payouts.c.inbox_item_id,
        payouts.c.confirmation,
        # A notification the API contradicts: its state counts as the API's, and the
        # webhook column says what the notification claimed (the gap is its exception).
        notified=[
            case(
                (
                    payouts.c.disputed_status.is_not(None),
                    case(
                        (
                            payouts.c.disputed_status.in_(PAID_OUT),
                            func.coalesce(payouts.c.disputed_cents, payouts.c.amount_cents),
                        ),
                        else_=0,
                    ),
                ),
                (payouts.c.status.in_(PAID_OUT), payouts.c.amount_cents),
                else_=0,
            ),
            case(
                (
                    and_(payouts.c.status.in_(RETURNED), ~payouts.c.returns_apart),
                    payouts.c.refunded_cents,
                ),
                else_=0,
            ),
        ],
    )
    returns = day_returns(ctx)
    made = or_(returns.c.status.is_(None), returns.c.status.not_in(NOT_PAID))
    # As notified, and as they count: the API's word once it stated one.
    notified, counted = _webhook_and_api(
        session,
        returns,
        [
            case((made, returns.c.notified_cents), else_=0),
            case((made, returns.c.amount_cents), else_=0),
        ],
        returns.c.inbox_item_id,
        returns.c.confirmation,
    )
    figures["payout_returns"] = (
        returned_before[0] + notified[0],
        returned_before[1] + counted[1],
    )
    cases = (
        select(F)
        .where(ctx.within(func.coalesce(F.c.provider_updated_at, F.c.updated_at)))
        .subquery()
    )
    inbox = table_of(InboxItem)
    # A case's debit is the provider's word once its API stated the case's closing
    # (``confirm_closed_infractions``, or a poll): having asked it for the Pix the case
    # disputes, or a poll in the notified status (a repeat of the notification's item,
    # never read), says nothing of the debit.
    case_webhook, case_api = session.execute(
        select(
            func.sum(case((inbox.c.webhook_count > 0, cases.c.debited_cents), else_=0)),
            func.sum(func.coalesce(api_debit(cases), 0)),
        ).select_from(
            cases.outerjoin(
                inbox,
                items_of(session, inbox, cases.c.inbox_item_id),
            )
        )
    ).one()
    figures["med_debits"] = (
        med_refunds[0] + _cents(case_webhook),
        med_refunds[1] + _cents(case_api),
    )
    figures["fees"] = (None, None)
    figures["other"] = (None, None)
    return SourceFigures(statement, figures)


def day_bridge(
    session: Session, ctx: RunContext, balance: dict[str, Any], sources: SourceFigures
) -> dict[str, Any]:
    """The bridge of the day (see the module's docstring), from ``sources`` and the run's
    carried verdicts. Amounts in centavos."""
    statement, figures = sources.statement, sources.webhook_and_api
    carried = {
        "pix_received": _carried(session, ctx, "movement", "E%"),
        "refunds_sent": _carried(session, ctx, "movement", "D%"),
        "payouts": _carried(session, ctx, "payout", "%"),
        "payout_returns": _carried(session, ctx, "movement", RETURN_REF + "%"),
    }
    rows = []
    explained = 0
    for category, label, sign in CATEGORIES:
        webhook, api = figures[category]
        booked = statement.get(category, 0)
        carried_in, carried_out = carried.get(category, (0, 0))
        if category != "other":
            explained += sign * booked
        rows.append(
            {
                "category": category,
                "label": label,
                "sign": sign,
                "webhook_cents": webhook,
                "api_cents": api,
                "statement_cents": booked,
                "carried_in_cents": carried_in,
                "carried_out_cents": carried_out,
                "difference_cents": (
                    None if api is None else booked - (api + carried_in - carried_out)
                ),
            }
        )
    opening, closing = balance.get("opening_cents"), balance.get("closing_cents")
    residual = None if opening is None or closing is None else opening + explained - closing
    return {
        "opening_cents": opening,
        "closing_cents": closing,
        "categories": rows,
        "unexplained_cents": statement.get("other", 0),
        "residual_cents": residual,
    }


# The verdicts that can say why a category's figures differ: (subject, ref pattern).
EXPLAINED_BY: dict[str, tuple[tuple[str, str], ...]] = {
    "pix_received": (("movement", "E%"),),
    "refunds_sent": (("movement", "D%"),),
    "payouts": (("payout", "%"),),
    "payout_returns": (("movement", RETURN_REF + "%"),),
    "med_debits": (("movement", "D%"), ("infraction", "%")),
}
UNEXPLAINED_REF = actions.UNEXPLAINED_REF
"""The ``ref`` of a category's difference that no item explains: ``bridge:{category}``."""


def flag_unexplained_differences(session: Session, ctx: RunContext, bridge: dict[str, Any]) -> None:
    """A category whose statement and API figures differ, with no exception and no pending
    item of its kind to say why, is an exception of its own: pixrecon has no rule for what
    happened, and the day must not be called reconciled for it. Without a statement for
    the day every category differs by what was not booked, and the day is ``incomplete``
    for that reason already."""
    if not ctx.statement_known:
        return
    items = table_of(ReconciliationItem)
    rows = []
    for row in bridge["categories"]:
        difference, kinds = row["difference_cents"], EXPLAINED_BY.get(row["category"])
        if difference in (0, None) or kinds is None:
            continue
        explained = session.execute(
            select(func.count()).where(
                items.c.run_id == ctx.run_id,
                or_(items.c.exception, is_pending(items)),
                or_(*(and_(items.c.subject == s, items.c.ref.like(p)) for s, p in kinds)),
            )
        ).scalar_one()
        if explained:
            continue
        rows.append(
            {
                "run_id": ctx.run_id,
                "subject": "statement",
                "ref": UNEXPLAINED_REF + row["category"],
                "status": "unexplained",
                "exception": True,
                "reason": (
                    f"the statement's {row['label']} differ from what the provider's API "
                    f"stands behind by {brl(difference)}, and no item of the day says why"
                ),
                "expected_cents": row["statement_cents"],
                "actual_cents": (
                    row["api_cents"] + row["carried_in_cents"] - row["carried_out_cents"]
                ),
                "source": "statement",
                "priority": EXCEPTION_PRIORITY,
            }
        )
    if rows:
        session.execute(insert(items), rows)
