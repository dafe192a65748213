"""Polling the accounts API: the statement and balance (the provider's own books), MED
infractions, invoices, and the current state of payouts still in flight. Everything enters
the inbox as ``source=poll`` and is processed like a notification."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from decimal import Decimal
from typing import Any, Protocol

from sqlalchemy import ColumnElement, Engine, func, or_, select, update
from sqlmodel import Session, col

from reconcile.db import session_scope
from reconcile.inbox import NewItem
from reconcile.logs import get_logger
from reconcile.matching.context import PAYOUT, PAYOUT_REFUND
from reconcile.models import (
    OPEN_INFRACTION_STATES,
    UNKNOWN_INFRACTION_STATE,
    AccountMovement,
    Infraction,
    PayoutReturn,
    StatementEntry,
)
from reconcile.payloads.accounts import accounts_items
from reconcile.payloads.charges import invoice_item
from reconcile.payloads.statement import balance_item, statement_item
from reconcile.payloads.tolerant import read_timestamp
from reconcile.polling.store import OnNew, PollResult, ask_each, store_polled, walk_and_store

log = get_logger(__name__)

UNKNOWN_INFRACTION = "infraction_unknown_to_provider"


class AccountsSource(Protocol):
    def get_payment_by_key(self, idempotency_key: str) -> dict[str, Any]: ...
    def get_balance(self) -> Decimal: ...
    def iter_invoices(self) -> Iterator[dict[str, Any]]: ...
    def iter_statement(self, start: datetime, end: datetime) -> Iterator[dict[str, Any]]: ...
    def iter_infractions(
        self, *, status: str | None = ..., start: datetime | None = ..., end: datetime | None = ...
    ) -> Iterator[dict[str, Any]]: ...
    def get_infraction(self, infraction_id: str) -> dict[str, Any]: ...


def _notification(kind: str) -> Callable[[dict[str, Any]], list[NewItem]]:
    def to_items(data: dict[str, Any]) -> list[NewItem]:
        return accounts_items({"type": kind, "data": data})

    return to_items


def poll_statement(
    api: AccountsSource, engine: Engine, start: datetime, end: datetime, on_new: OnNew = None
) -> PollResult:
    found = api.iter_statement(start, end)
    return walk_and_store(
        engine,
        found,
        lambda line: [statement_item(line)],
        on_new,
        what="statement",
        window=(start, end),
    )


def poll_balance(
    api: AccountsSource, engine: Engine, taken_at: datetime, on_new: OnNew = None
) -> PollResult:
    """The balance as the API states it now; ``taken_at`` is when it was asked."""
    item = balance_item(api.get_balance(), taken_at)
    return PollResult(seen=1, new_ids=store_polled(engine, [item], on_new))


def poll_infractions(
    api: AccountsSource, engine: Engine, start: datetime, end: datetime, on_new: OnNew = None
) -> PollResult:
    found = api.iter_infractions(start=start, end=end)
    return walk_and_store(
        engine, found, _notification("INFRACTION"), on_new, what="infraction", window=(start, end)
    )


def refresh_open_infractions(
    api: AccountsSource, engine: Engine, on_new: OnNew = None, *, limit: int = 500
) -> PollResult:
    """Each case still open here, and each closed one whose notification did not say when,
    asked for again. The listing walks cases by when they were opened: one opened on an
    earlier day and closed since, its notification lost, would otherwise stay open here for
    good, at risk on every later day, and its debit would find no closed case; and a case
    must close on the day it closed, not the day its notification was read."""
    open_here = func.upper(col(Infraction.status)).in_(OPEN_INFRACTION_STATES)
    unknown_here = col(Infraction.status) == UNKNOWN_INFRACTION_STATE
    with session_scope(engine) as session:
        ids = list(
            session.execute(
                select(col(Infraction.infraction_id))
                .where(or_(open_here, unknown_here, col(Infraction.provider_updated_at).is_(None)))
                .order_by(col(Infraction.infraction_id))
                .limit(limit)
            ).scalars()
        )
    listed: list[dict[str, Any]] = []
    answered: set[str] = set()

    def found() -> Iterator[dict[str, Any]]:
        for asked, case in ask_each(ids, api.get_infraction, unknown=UNKNOWN_INFRACTION):
            answered.add(asked)
            listed.append(case)
            yield case

    result = walk_and_store(engine, found(), _notification("INFRACTION"), on_new, what="infraction")
    with session_scope(engine) as session:
        # A case only a notification spoke of, which the provider does not know: nothing
        # of it is at risk, and the day it was opened says so (``matching/infractions``).
        session.execute(
            update(Infraction)
            .where(
                col(Infraction.infraction_id).in_([i for i in ids if i not in answered]),
                col(Infraction.status) != UNKNOWN_INFRACTION_STATE,
            )
            .values(status=UNKNOWN_INFRACTION_STATE, rank=0)
        )
    # The API's answer in a status already stored is a repeat of that item, not processed
    # again: its closing time, which the notification lacked, is written here.
    with session_scope(engine) as session:
        for case in listed:
            closed = read_timestamp(case.get("closedAt"))
            if closed is not None and isinstance(case.get("id"), str):
                session.execute(
                    update(Infraction)
                    .where(
                        col(Infraction.infraction_id) == case["id"],
                        col(Infraction.provider_updated_at).is_(None),
                    )
                    .values(provider_updated_at=closed)
                )
    return result


def identify_disputed_pix(api: AccountsSource, engine: Engine, *, limit: int = 500) -> PollResult:
    """An INFRACTION notification names the case, not the Pix it disputes: ask the API for
    each case still without its ``endToEndId``, so MED debits can be matched to the Pix."""
    with session_scope(engine) as session:
        ids = list(
            session.execute(
                select(col(Infraction.infraction_id))
                .where(col(Infraction.end_to_end_id).is_(None))
                .limit(limit)
            ).scalars()
        )
    result = PollResult()
    for infraction_id, found in ask_each(ids, api.get_infraction, unknown=UNKNOWN_INFRACTION):
        result.seen += 1
        e2e = found.get("endToEndId")
        if not isinstance(e2e, str) or not e2e:
            result.invalid += 1
            continue
        with session_scope(engine) as session:
            session.execute(
                update(Infraction)
                .where(
                    col(Infraction.infraction_id) == infraction_id,
                    col(Infraction.end_to_end_id).is_(None),
                )
                .values(end_to_end_id=e2e[:64])
            )
    return result


def poll_invoices(api: AccountsSource, engine: Engine, on_new: OnNew = None) -> PollResult:
    """Invoices are expected payments too; the list is walked whole (no time filter)."""
    found = api.iter_invoices()
    return walk_and_store(engine, found, lambda raw: [invoice_item(raw)], on_new, what="invoice")


def poll_pending_payouts(
    api: AccountsSource, engine: Engine, on_new: OnNew = None, *, limit: int = 500
) -> PollResult:
    """Payouts last seen PROCESSING, and payouts the statement debited by an
    idempotencyKey no notification brought: ask for their state now, so a settlement,
    a rejection or a whole payout whose notifications never came is still recorded."""
    with session_scope(engine) as session:
        keys = list(
            session.execute(
                select(col(AccountMovement.idempotency_key))
                .where(
                    col(AccountMovement.type).in_(("TRANSFER", "CASHOUT")),
                    col(AccountMovement.status) == "PROCESSING",
                    col(AccountMovement.idempotency_key).is_not(None),
                )
                .distinct()
                .limit(limit)
            ).scalars()
        )
        known = select(AccountMovement.idempotency_key).where(  # type: ignore[call-overload]
            col(AccountMovement.idempotency_key) == col(StatementEntry.idempotency_key)
        )
        keys += _unexplained_lines(session, "DEBIT", PAYOUT, ~known.exists(), limit=limit)
        # A return credited with its payout's key that no notification brought: the
        # payout as the API states it now lists its returns.
        returned = select(PayoutReturn.id).where(  # type: ignore[call-overload]
            col(PayoutReturn.end_to_end_id) == col(StatementEntry.end_to_end_id)
        )
        keys += _unexplained_lines(
            session,
            "CREDIT",
            PAYOUT_REFUND,
            col(StatementEntry.end_to_end_id).is_not(None),
            ~returned.exists(),
            limit=limit,
        )
        keys = list(dict.fromkeys(keys))

    # Unknown to the provider: confirmation flags the notification.
    payments = ask_each(keys, api.get_payment_by_key, unknown="payout_unknown_to_provider")
    return walk_and_store(
        engine, (p for _, p in payments), _notification("TRANSFER"), on_new, what="payout"
    )


def _unexplained_lines(
    session: Session,
    side: str,
    categories: tuple[str, ...],
    *unexplained: ColumnElement[bool],
    limit: int,
) -> list[str]:
    """The idempotencyKeys of the statement's payout lines of one side that nothing
    stored explains (``unexplained``)."""
    return list(
        session.execute(
            select(col(StatementEntry.idempotency_key))
            .where(
                col(StatementEntry.type) == side,
                col(StatementEntry.category).in_(categories),
                col(StatementEntry.idempotency_key).is_not(None),
                *unexplained,
            )
            .distinct()
            .limit(limit)
        ).scalars()
    )
