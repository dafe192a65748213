"""Confirm-by-API (docs/design.md §1.5): a webhook is a trigger, not proof. Every notified movement
is looked up with the provider's API before its money counts; one the API still denies
after the grace period is flagged ``unconfirmed_webhook`` (a possible forgery), one it
knows with another amount ``amount_mismatch``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Protocol, runtime_checkable

from sqlalchemy import ColumnElement, Engine, and_, bindparam, func, or_, select, update
from sqlmodel import col

from reconcile.db import session_scope, table_of
from reconcile.denied_claims import DENIED, record_denied
from reconcile.handlers.accounts import api_return_cents
from reconcile.handlers.automatico import calendar_of
from reconcile.inbox import NewItem
from reconcile.logs import get_logger
from reconcile.metrics import CONFIRMATIONS
from reconcile.models import (
    OPEN_INFRACTION_STATES,
    AccountMovement,
    Confirmation,
    Infraction,
    PayoutReturn,
    PixReceived,
    PixRefund,
    Recurrence,
    RecurringCharge,
    UtcDateTime,
)
from reconcile.money import InvalidAmount, parse_amount, to_cents
from reconcile.payloads import PayloadInvalid
from reconcile.payloads.automatico import (
    Atualizacao,
    cobr_callback_items,
    latest_update,
    rec_callback_items,
)
from reconcile.payloads.charges import Charge, charge_item
from reconcile.payloads.pix import api_pix_items
from reconcile.payloads.tolerant import read_timestamp
from reconcile.polling.store import OnNew, store_polled
from reconcile.provider.errors import (
    AuthenticationFailed,
    Forbidden,
    InvalidResponse,
    NotFound,
    ProviderError,
    ProviderUnavailable,
)
from reconcile.settings import Settings
from reconcile.timeutil import as_utc, utcnow

log = get_logger(__name__)

Confirmed = type[PixReceived] | type[AccountMovement] | type[PixRefund]

# Unknown to the API inside the grace period: look again after 30 s, 1 min, 2 min, …
FIRST_RECHECK = timedelta(seconds=30)
MAX_RECHECK = timedelta(minutes=10)
UNKNOWN_AMOUNT = -1
"""What a look-up returns when the API confirms the movement but states no amount."""
# Failures that will fail every look-up alike: stop and retry the whole batch later.
STOP_ERRORS: tuple[type[Exception], ...] = (ProviderUnavailable, AuthenticationFailed, Forbidden)


class NotListed(Exception):
    """A listing of the API's does not hold the row: it says nothing about it either way
    (the row may lie outside the listed window), so the row is left as it was."""


class Unverifiable(Exception):
    """The movement carries nothing to look it up by; no retry will change that."""


PAID_OUT = frozenset({"LIQUIDATED", "PARTIALLY_REFUNDED", "REFUNDED"})
NOT_PAID = frozenset({"REJECTED", "CANCELED"})
RETURNED = frozenset({"PARTIALLY_REFUNDED", "REFUNDED"})
OUTCOMES = PAID_OUT | NOT_PAID


def _outcomes_differ(notified: object, stated: object) -> bool:
    """Paid on one side and not paid on the other. A notification may trail the provider
    (PROCESSING, then LIQUIDATED, then REFUNDED): that is not a disagreement."""
    return (notified in PAID_OUT and stated in NOT_PAID) or (
        notified in NOT_PAID and stated in PAID_OUT
    )


class StatusDisagrees(Exception):
    """The API knows the movement, settled otherwise than notified (e.g. notified
    LIQUIDATED, REJECTED at the provider)."""


class AheadOfApi(StatusDisagrees):
    """Notified with an outcome (paid, or not paid) while the API still states the
    movement in progress: inside the grace period the API may catch up; past it, what
    was notified is what the API does not state."""


class PixLookup(Protocol):
    def get_pix(self, e2eid: str) -> dict[str, Any]: ...


class PaymentLookup(Protocol):
    def get_payment(self, end_to_end_id: str) -> dict[str, Any]: ...
    def get_payment_by_key(self, idempotency_key: str) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Due:
    """A row waiting for its look-up."""

    id: int
    created_at: datetime
    attempts: int
    amount_cents: int | None
    fields: dict[str, Any]


@dataclass
class ConfirmReport:
    confirmed: list[int] = field(default_factory=list)
    unconfirmed: list[int] = field(default_factory=list)
    mismatched: list[int] = field(default_factory=list)
    still_pending: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    unverifiable: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    """The look-up failed for this row alone (an answer we could not read, a bug): it is
    tried again later; once its grace period is over, the day counts it as a break."""
    interrupted: bool = False
    """The provider became unavailable; the rest waits for the next run."""

    def extend(self, other: ConfirmReport) -> None:
        for name in LISTS:
            getattr(self, name).extend(getattr(other, name))
        self.interrupted = self.interrupted or other.interrupted

    @property
    def handled(self) -> int:
        return sum(len(getattr(self, name)) for name in LISTS)


LISTS = (
    "confirmed",
    "unconfirmed",
    "mismatched",
    "still_pending",
    "skipped",
    "unverifiable",
    "failed",
)


def _recheck_after(attempts: int) -> timedelta:
    return min(FIRST_RECHECK * (1 << min(max(attempts - 1, 0), 16)), MAX_RECHECK)


def pix_of(api: PixLookup, e2e: str) -> dict[str, Any]:
    """``GET /pix/{e2eid}``, as an answer about that Pix: one that names another Pix, or
    none, or has no ``valor`` at all is no confirmation of anything (a provider's broken
    200 ``{}`` would otherwise confirm a forged notification of any amount). A ``valor``
    that cannot be read is the API stating an amount nobody can read (``UNKNOWN_AMOUNT``)."""
    found = api.get_pix(e2e)
    if found.get("endToEndId") != e2e:
        raise InvalidResponse("GET /pix/{e2eid}: the answer names another Pix, or none", status=200)
    if found.get("valor") is None:
        raise InvalidResponse("GET /pix/{e2eid}: the answer has no valor", status=200)
    return found


def money_cents(value: object) -> int:
    try:
        return to_cents(parse_amount(value))
    except InvalidAmount:
        return UNKNOWN_AMOUNT


def confirm_pending(
    engine: Engine,
    model: Confirmed,
    lookup: Callable[[Due], int | None],
    *,
    grace: timedelta,
    extra_columns: tuple[str, ...] = (),
    limit: int = 100,
    now: datetime | None = None,
    amount_from_api: bool = False,
    listed_until: datetime | None = None,
) -> ConfirmReport:
    """Look up the rows due for a check; API calls happen outside any transaction.
    ``lookup`` returns the amount the API states (cents, or ``UNKNOWN_AMOUNT``), raises
    ``NotFound``, or returns ``None`` when nothing can look this row up now.

    With ``amount_from_api``, a row whose notified amount could not be read
    (``amount_cents`` null) takes the API's; until the API states one it stays pending,
    since money of unknown amount cannot count.

    With ``listed_until``, rows written after it are left for the next listing of the
    API (``confirm_listed``), which settles them without a call each."""
    now = now or utcnow()
    due_now = col(model.next_check_at) <= now
    if listed_until is not None:
        written = col(
            PixReceived.created_at if model is PixReceived else model.updated_at  # type: ignore[union-attr]
        )
        due_now = and_(due_now, written <= listed_until)
    due = _pending(
        engine,
        model,
        due_now,
        extra_columns,
        order_by=col(model.next_check_at),
        limit=limit,
    )
    return _judge(engine, model, due, lookup, grace=grace, now=now, amount_from_api=amount_from_api)


def _pending(
    engine: Engine,
    model: Confirmed,
    condition: ColumnElement[bool],
    extra_columns: tuple[str, ...],
    *,
    order_by: Any = None,
    limit: int | None = None,
) -> list[Due]:
    with session_scope(engine) as session:
        rows = session.execute(
            select(model)
            .where(col(model.confirmation) == Confirmation.PENDING.value, condition)
            .order_by(order_by)
            .limit(limit)
        ).scalars()
        return [
            Due(
                id=row.id or 0,
                created_at=as_utc(
                    row.created_at if isinstance(row, PixReceived) else row.updated_at
                ),
                attempts=row.check_attempts,
                amount_cents=row.amount_cents,
                fields={name: getattr(row, name) for name in extra_columns},
            )
            for row in rows
        ]


def _judge(
    engine: Engine,
    model: Confirmed,
    due: list[Due],
    lookup: Callable[[Due], int | None],
    *,
    grace: timedelta,
    now: datetime,
    amount_from_api: bool,
) -> ConfirmReport:
    """What the API's answer about each row makes of it, recorded in one transaction.
    A lookup that raises ``NotListed`` leaves its row as it was."""
    report = ConfirmReport()
    outcomes: list[tuple[int, str, int | None, datetime | None]] = []
    for row in due:
        try:
            api_cents = lookup(row)
        except NotListed:
            continue
        except NotFound:
            if now - row.created_at >= grace:
                outcomes.append((row.id, Confirmation.UNCONFIRMED_WEBHOOK.value, None, None))
                report.unconfirmed.append(row.id)
            else:
                retry_at = now + _recheck_after(row.attempts + 1)
                outcomes.append((row.id, Confirmation.PENDING.value, None, retry_at))
                report.still_pending.append(row.id)
            continue
        except STOP_ERRORS:
            report.interrupted = True
            break
        except AheadOfApi:
            if now - row.created_at < grace:
                retry_at = now + _recheck_after(row.attempts + 1)
                outcomes.append((row.id, Confirmation.PENDING.value, None, retry_at))
                report.still_pending.append(row.id)
                continue
            outcomes.append((row.id, Confirmation.STATUS_MISMATCH.value, None, None))
            report.mismatched.append(row.id)
            continue
        except StatusDisagrees as exc:
            outcomes.append((row.id, Confirmation.STATUS_MISMATCH.value, None, None))
            report.mismatched.append(row.id)
            log.warning(
                "movement_status_differs", table=model.__tablename__, row=row.id, api=str(exc)
            )
            continue
        except Unverifiable as exc:
            log.warning(
                "movement_unverifiable", table=model.__tablename__, row=row.id, why=str(exc)
            )
            outcomes.append((row.id, Confirmation.UNVERIFIABLE.value, None, None))
            report.unverifiable.append(row.id)
            continue
        except Exception as exc:
            # One row whose look-up fails (an answer we cannot read, a bug of ours) must not
            # stop the rows behind it: it waits, and past its grace period it is a break.
            log.error(
                "confirmation_failed",
                table=model.__tablename__,
                row=row.id,
                error=type(exc).__name__,
                provider=isinstance(exc, ProviderError),
            )
            outcomes.append((row.id, Confirmation.PENDING.value, None, now + MAX_RECHECK))
            report.failed.append(row.id)
            continue
        if api_cents is None:
            # No API can vouch for this one now (e.g. the QR code API is not configured); look
            # again much later rather than blocking the rows behind it.
            outcomes.append((row.id, Confirmation.PENDING.value, None, now + MAX_RECHECK * 6))
            report.skipped.append(row.id)
            continue
        if amount_from_api and row.amount_cents is None and api_cents == UNKNOWN_AMOUNT:
            log.warning("movement_amount_unknown", table=model.__tablename__, row=row.id)
            outcomes.append((row.id, Confirmation.PENDING.value, None, now + MAX_RECHECK))
            report.still_pending.append(row.id)
            continue
        agrees = api_cents == UNKNOWN_AMOUNT or row.amount_cents in (None, api_cents)
        stated = None if api_cents == UNKNOWN_AMOUNT else api_cents
        if agrees:
            outcomes.append((row.id, Confirmation.CONFIRMED.value, stated, None))
            report.confirmed.append(row.id)
        else:
            outcomes.append((row.id, Confirmation.AMOUNT_MISMATCH.value, stated, None))
            report.mismatched.append(row.id)
    if outcomes:
        _record(engine, model, outcomes, now, amount_from_api=amount_from_api)
    if report.unconfirmed or report.mismatched:
        log.warning(
            "movements_not_confirmed",
            table=model.__tablename__,
            unconfirmed=len(report.unconfirmed),
            amount_mismatch=len(report.mismatched),
        )
    return report


def _record(
    engine: Engine,
    model: Confirmed,
    outcomes: list[tuple[int, str, int | None, datetime | None]],
    now: datetime,
    *,
    amount_from_api: bool = False,
) -> None:
    table = table_of(model)
    # One statement for every row (executemany): a listing settles hundreds at once. The
    # parameters are prefixed so that none is named like a column (``settled_at``).
    stmt = (
        update(table)
        .where(
            table.c.id == bindparam("b_row_id"),
            # A concurrent confirmer may have settled it already; first answer wins.
            table.c.confirmation == Confirmation.PENDING.value,
        )
        .values(
            confirmation=bindparam("b_outcome"),
            confirmed_amount_cents=bindparam("b_stated"),
            confirmed_at=bindparam("b_settled_at"),
            next_check_at=bindparam("b_check_at"),
            check_attempts=table.c.check_attempts + 1,
            # An amount the notification did not let us read is the API's from now on.
            amount_cents=func.coalesce(table.c.amount_cents, bindparam("b_filled")),
        )
    )
    rows = [
        {
            "b_row_id": row_id,
            "b_outcome": confirmation,
            "b_stated": amount_cents,
            "b_settled_at": now if confirmation != Confirmation.PENDING.value else None,
            "b_check_at": next_check_at,
            "b_filled": amount_cents if amount_from_api else None,
        }
        for row_id, confirmation, amount_cents, next_check_at in outcomes
    ]
    with session_scope(engine) as session:
        session.execute(stmt, rows)


def confirm_pending_pix(
    engine: Engine,
    api: PixLookup,
    *,
    grace: timedelta,
    limit: int = 100,
    listed_until: datetime | None = None,
) -> ConfirmReport:
    stated: dict[str, object] = {}

    def lookup(due: Due) -> int:
        e2e = due.fields["end_to_end_id"]
        found = pix_of(api, e2e)
        stated[e2e] = found.get("horario")
        return money_cents(found.get("valor"))

    report = confirm_pending(
        engine,
        PixReceived,
        lookup,
        grace=grace,
        extra_columns=("end_to_end_id",),
        limit=limit,
        amount_from_api=True,
        listed_until=listed_until,
    )
    take_api_times(engine, stated)
    return report


def take_api_times(engine: Engine, stated: dict[str, object]) -> int:
    """The time the provider's API states for each Pix (``horario``), where the stored one
    came otherwise (a webhook's clock, seconds off): the API decides which day a Pix is
    of, as it decides its amount. A time the API states unreadably changes nothing.
    Returns how many rows changed."""
    readable = {e2e: (when, raw) for e2e, raw in stated.items() if (when := read_timestamp(raw))}
    if not readable:
        return 0
    changed = 0
    keys = sorted(readable)
    with session_scope(engine) as session:
        for at in range(0, len(keys), LISTED_CHUNK):
            chunk = keys[at : at + LISTED_CHUNK]
            stored = session.execute(
                select(col(PixReceived.end_to_end_id), col(PixReceived.horario)).where(
                    col(PixReceived.end_to_end_id).in_(chunk)
                )
            ).all()
            for e2e, horario in stored:
                when, raw = readable[e2e]
                if horario is not None and as_utc(horario) == when:
                    continue
                session.execute(
                    update(PixReceived)
                    .where(col(PixReceived.end_to_end_id) == e2e)
                    .values(horario=when, horario_raw=str(raw)[:64])
                )
                changed += 1
    return changed


def confirm_pending_movements(
    engine: Engine,
    payments: PaymentLookup,
    pix: PixLookup | None,
    *,
    grace: timedelta,
    limit: int = 100,
) -> ConfirmReport:
    """Payouts (TRANSFER, CASHOUT) by idempotency key or endToEndId; credits (RECEIVE) by
    the QR code API; refunds by the payout they refund, else by the Pix they refund. The
    returns a payout's answer lists are the API's word on each (``take_api_returns``), and
    so is the state it states of a payout whose notified one it contradicts
    (``take_api_states``)."""
    returns: dict[str, int] = {}
    states: dict[int, tuple[str, int | None]] = {}

    def contradicted(due: Due, found: dict[str, Any]) -> StatusDisagrees:
        stated = found.get("status")
        if isinstance(stated, str):
            cents = money_cents((found.get("payment") or {}).get("amount"))
            states[due.id] = (stated, None if cents == UNKNOWN_AMOUNT else cents)
        return StatusDisagrees(str(stated))

    def lookup(due: Due) -> int | None:
        kind, key, e2e = (due.fields[n] for n in ("type", "idempotency_key", "end_to_end_id"))
        if kind in ("TRANSFER", "CASHOUT"):
            if not (key or e2e):
                raise Unverifiable("a payout with neither idempotencyKey nor endToEndId")
            found = payments.get_payment_by_key(key) if key else payments.get_payment(e2e)
            returns.update(_listed_returns(found))
            # A payout is confirmed by its state too: notified as paid, the provider must
            # say so (a notification still PROCESSING may trail the provider).
            if _outcomes_differ(due.fields["status"], found.get("status")):
                raise contradicted(due, found)
            stated = found.get("status")
            if (
                due.fields["status"] in OUTCOMES
                and isinstance(stated, str)
                and stated not in OUTCOMES
            ):
                # Money notified as paid out (or a payout as refused) is not the API's
                # word while the API says it is still being processed.
                contradicted(due, found)
                raise AheadOfApi(stated)
            return money_cents((found.get("payment") or {}).get("amount"))
        if kind == "RECEIVE":
            return money_cents(pix_of(pix, e2e).get("valor")) if pix and e2e else None
        if kind == "REFUND" and e2e:
            try:
                found = payments.get_payment(e2e)
            except NotFound:
                if pix is None:
                    raise
                pix_of(pix, e2e)
                # The refunded Pix is known; refund amounts are checked by reconciliation.
                return UNKNOWN_AMOUNT
            returns.update(_listed_returns(found))
            # A return of a payout: the provider must state the payout returned, or list
            # a return of it. Knowing the payout is not enough, or a forged return of a
            # real payout would count as money back.
            if found.get("status") not in RETURNED and not found.get("refunds"):
                raise contradicted(due, found)
            # Each return's amount is then the API's (``take_api_returns``); the payout's
            # own is checked as a payout's is.
            return money_cents((found.get("payment") or {}).get("amount"))
        return None

    report = confirm_pending(
        engine,
        AccountMovement,
        lookup,
        grace=grace,
        extra_columns=("type", "idempotency_key", "end_to_end_id", "status"),
        limit=limit,
    )
    take_api_returns(engine, returns)
    take_api_states(engine, states)
    return report


def _listed_returns(payout: dict[str, Any]) -> dict[str, int]:
    """The returns the API's answer about a payout lists, by endToEndId, each with what
    the API stands behind of it; one whose amount cannot be read states nothing."""
    found = payout.get("refunds")
    if isinstance(found, dict):  # one return, as some providers send it
        found = [found]
    listed: dict[str, int] = {}
    for entry in found if isinstance(found, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("endToEndId"), str):
            continue
        cents = money_cents(entry.get("pixRefundAmount"))
        if cents != UNKNOWN_AMOUNT:
            listed[entry["endToEndId"]] = api_return_cents(entry.get("status"), cents) or 0
    return listed


def take_api_returns(engine: Engine, stated: dict[str, int]) -> None:
    """What the provider's API states each return of a payout was, kept beside what the
    notifications said (``payout_return.confirmed_amount_cents``): a notification stating a
    return larger than it was must not count as the API's word, and must be seen."""
    if not stated:
        return
    table = table_of(PayoutReturn)
    with session_scope(engine) as session:
        session.execute(
            update(table)
            .where(table.c.ref == bindparam("b_ref"))
            .values(confirmed_amount_cents=bindparam("b_cents")),
            [{"b_ref": ref, "b_cents": cents} for ref, cents in sorted(stated.items())],
        )


def take_api_states(
    engine: Engine,
    stated: dict[int, tuple[str, int | None]],
    model: type[AccountMovement] | type[PixRefund] = AccountMovement,
) -> None:
    """What the provider's API states of each payout (or refund) whose notified state it
    contradicts (``status_mismatch``): its status and amount, kept beside the
    notification. That notification replaced the row, and with it any state the API had
    confirmed before (an outcome ranks alike whatever it is); without the API's word the
    money it stands behind would stop counting. ``matching/payouts.py`` counts the payout
    as the API states it and judges the notification as its exception; a refund's
    exception names the outcome the API states (``matching/movements.py``). A row a newer
    notification has replaced since is left to that one's look-up."""
    if not stated:
        return
    table = table_of(model)
    with session_scope(engine) as session:
        session.execute(
            update(table)
            .where(
                table.c.id == bindparam("b_row_id"),
                table.c.confirmation == Confirmation.STATUS_MISMATCH.value,
            )
            .values(
                confirmed_status=bindparam("b_status"),
                confirmed_amount_cents=bindparam("b_cents"),
            ),
            [
                {"b_row_id": row_id, "b_status": status[:32], "b_cents": cents}
                for row_id, (status, cents) in sorted(stated.items())
            ],
        )


def _devolucoes(pix: dict[str, Any]) -> list[dict[str, Any]]:
    found = pix.get("devolucoes")
    if isinstance(found, dict):  # one refund, as some providers send it
        found = [found]
    return [d for d in found or [] if isinstance(d, dict)]


def _refund_cents(pix: dict[str, Any], due: Due) -> int:
    """What the API's view of a Pix (``GET /pix/{e2eid}``, or a listing) says of one of its
    refunds: counted in the same state and for the same amount."""
    e2e, refund_id, rtr_id, status = (
        due.fields[n] for n in ("end_to_end_id", "refund_id", "rtr_id", "status")
    )
    for refund in _devolucoes(pix):
        if refund.get("id") == refund_id or (rtr_id and refund.get("rtrId") == rtr_id):
            stated = refund.get("status")
            if stated in FINAL_REFUND_STATUSES and stated != status:
                raise StatusDisagrees(str(stated))
            return money_cents(refund.get("valor"))
    raise NotFound(f"refund {refund_id} of {e2e} is not in the API's answer")


def _stated_refund(pix: dict[str, Any], due: Due, states: dict[int, tuple[str, int | None]]) -> int:
    """``_refund_cents``, keeping the final state the API states of a refund whose notified
    final state it contradicts, for ``take_api_states``."""
    try:
        return _refund_cents(pix, due)
    except StatusDisagrees as exc:
        if not _moved_on(due):
            states[due.id] = (str(exc)[:32], None)
        raise


REFUND_FIELDS = ("end_to_end_id", "refund_id", "rtr_id", "status")
FINAL_REFUND_STATUSES = ("DEVOLVIDO", "NAO_REALIZADO")


def _moved_on(due: Due) -> bool:
    """A refund the API states in a final state other than its own has moved on when it
    was notified in progress: the API's state is its next fact, not a disagreement."""
    return due.fields["status"] not in FINAL_REFUND_STATUSES


def confirm_pending_refunds(
    engine: Engine,
    api: PixLookup,
    *,
    grace: timedelta,
    limit: int = 100,
    listed_until: datetime | None = None,
    on_new: OnNew = None,
) -> ConfirmReport:
    """A refund counts once ``GET /pix/{e2eid}`` of the refunded Pix lists it, in the same
    state and for the same amount. One notified in progress that the API shows settled (or
    not done) has moved on since: the API's answer is stored as a polled sighting, an item
    whose processing brings the refund's new state, confirmed, as a listing would; its new
    ids go to ``on_new``. The state the API states of one it contradicts is kept
    (``take_api_states``)."""
    states: dict[int, tuple[str, int | None]] = {}

    def lookup(due: Due) -> int:
        pix = pix_of(api, due.fields["end_to_end_id"])
        try:
            return _stated_refund(pix, due, states)
        except StatusDisagrees:
            if not _moved_on(due):
                raise
            store_polled(engine, api_pix_items(pix), on_new)
            raise NotListed() from None

    report = confirm_pending(
        engine,
        PixRefund,
        lookup,
        grace=grace,
        extra_columns=REFUND_FIELDS,
        limit=limit,
        amount_from_api=True,
        listed_until=listed_until,
    )
    take_api_states(engine, states, PixRefund)
    return report


def confirm_listed(
    engine: Engine, listed: Iterable[object], *, now: datetime | None = None
) -> ConfirmReport:
    """The Pix a walk of ``GET /pix`` listed, and their refunds, as a look-up of each would
    have judged them: the listing states the same amount and state ``GET /pix/{e2eid}``
    does. Without this, every Pix a webhook brought first (its listing is then a repeat
    sighting) waited for a call of its own: on a busy day, a call per Pix, for hours.
    Rows a listing does not show are left as they were."""
    by_e2e = {
        pix["endToEndId"]: pix
        for pix in listed
        if isinstance(pix, dict) and isinstance(pix.get("endToEndId"), str)
    }
    report = ConfirmReport()
    if not by_e2e:
        return report
    now = now or utcnow()
    keys = sorted(by_e2e)

    def pix_cents(due: Due) -> int:
        return money_cents(by_e2e[due.fields["end_to_end_id"]].get("valor"))

    states: dict[int, tuple[str, int | None]] = {}

    def refund_cents(due: Due) -> int:
        try:
            return _stated_refund(by_e2e[due.fields["end_to_end_id"]], due, states)
        except NotFound:
            # The listing may predate the refund: no evidence either way.
            raise NotListed() from None
        except StatusDisagrees:
            if not _moved_on(due):
                raise
            # The listing's own item for the refund brings that fact, confirmed as it is
            # written.
            raise NotListed() from None

    for at in range(0, len(keys), LISTED_CHUNK):
        chunk = keys[at : at + LISTED_CHUNK]
        for subject, model, lookup, fields in (
            ("pix", PixReceived, pix_cents, ("end_to_end_id",)),
            ("refund", PixRefund, refund_cents, REFUND_FIELDS),
        ):
            due = _pending(engine, model, col(model.end_to_end_id).in_(chunk), fields)
            found = _judge(
                engine,
                model,
                due,
                lookup,
                # A listing never says "not found": no row here can run out of grace.
                grace=timedelta.max,
                now=now,
                amount_from_api=True,
            )
            _count(subject, found)
            report.extend(found)
    take_api_states(engine, states, PixRefund)
    take_api_times(engine, {e2e: pix.get("horario") for e2e, pix in by_e2e.items()})
    return report


LISTED_CHUNK = 500
# Batches of MED closings looked up in one pass at most.
MED_ROUNDS = 20


@runtime_checkable
class InfractionLookup(Protocol):
    def get_infraction(self, infraction_id: str) -> dict[str, Any]: ...


INFRACTION_DEBITED = ("debitedAmount", "debited_amount")


def confirm_closed_infractions(
    engine: Engine,
    api: InfractionLookup,
    *,
    grace: timedelta,
    limit: int = 100,
    now: datetime | None = None,
) -> ConfirmReport:
    """A MED case a notification closed (``infraction.confirmation`` pending) debits what
    the provider's API states, not what the notification says: its debit counts once the
    API states the case closed, and the debit it states is kept beside the notified one
    (``confirmed_debited_cents``). ``confirmed`` when they agree; ``amount_mismatch`` when
    the API states another debit (a case it closed without one, notified as debited: a
    possible forgery); past the grace period, ``status_mismatch`` while the API still
    states the case open and ``unconfirmed_webhook`` while it does not know it. A poll of
    the case cannot settle this: in the notified status it is a repeat of the
    notification's item, never read. MED cases are few: one call each. A case asked too
    early, or whose look-up failed, is asked again later, spaced out as every confirmed
    row is (``_recheck_after``), so that a batch of them never holds back the cases behind
    (``confirm_all`` drains them)."""
    now = now or utcnow()
    when = col(Infraction.next_check_at)
    with session_scope(engine) as session:
        due = session.execute(
            select(
                col(Infraction.id),
                col(Infraction.infraction_id),
                col(Infraction.debited_cents),
                col(Infraction.updated_at),
                col(Infraction.check_attempts),
            )
            .where(
                col(Infraction.confirmation) == Confirmation.PENDING.value,
                # None: never asked (or stored before look-ups were spaced out).
                or_(when.is_(None), when <= now),
            )
            .order_by(when.nulls_first(), col(Infraction.id))
            .limit(limit)
        ).all()
    report = ConfirmReport()
    outcomes: list[dict[str, Any]] = []
    for row_id, infraction_id, notified, updated_at, attempts in due:
        within_grace = now - as_utc(updated_at) < grace

        # Asked again later: still inside its grace period, or its look-up failed.
        waits = partial(_infraction_outcome, row_id, updated_at, Confirmation.PENDING)
        later = now + _recheck_after(attempts + 1)
        try:
            found = api.get_infraction(infraction_id)
            if found.get("id") != infraction_id:
                raise InvalidResponse(
                    "GET /infractions/{id}: the answer names another case, or none", status=200
                )
        except NotFound:
            if within_grace:
                outcomes.append(waits(check_at=later))
                report.still_pending.append(row_id)
                continue
            outcomes.append(
                _infraction_outcome(row_id, updated_at, Confirmation.UNCONFIRMED_WEBHOOK)
            )
            report.unconfirmed.append(row_id)
            continue
        except STOP_ERRORS:
            report.interrupted = True
            break
        except Exception as exc:
            # As for any look-up: this case waits, the ones behind it are asked.
            log.error(
                "confirmation_failed",
                table=Infraction.__tablename__,
                row=infraction_id,
                error=type(exc).__name__,
                provider=isinstance(exc, ProviderError),
            )
            outcomes.append(waits(check_at=now + MAX_RECHECK))
            report.failed.append(row_id)
            continue
        if str(found.get("status") or "").upper() in OPEN_INFRACTION_STATES:
            if within_grace:
                outcomes.append(waits(check_at=later))
                report.still_pending.append(row_id)
                continue
            outcomes.append(_infraction_outcome(row_id, updated_at, Confirmation.STATUS_MISMATCH))
            report.mismatched.append(row_id)
            continue
        name = next((n for n in INFRACTION_DEBITED if n in found), None)
        # A case closed without a debit may leave the field out; one it states but
        # nobody can read cannot count, nor be called a disagreement.
        stated = 0 if name is None else money_cents(found[name])
        if stated == UNKNOWN_AMOUNT:
            log.warning("infraction_debit_unknown", row=infraction_id)
            outcomes.append(waits(check_at=now + MAX_RECHECK))
            report.failed.append(row_id)
            continue
        agrees = notified in (None, stated)
        outcome = Confirmation.CONFIRMED if agrees else Confirmation.AMOUNT_MISMATCH
        # When it closed, as the API states it: a closing notified without its time (or
        # with another) is dated by the API's, or a day would read the case open at its
        # end, and the day it was notified closed, for good.
        closed_at = read_timestamp(found.get("closedAt"))
        outcomes.append(_infraction_outcome(row_id, updated_at, outcome, stated, closed_at))
        (report.confirmed if agrees else report.mismatched).append(row_id)
    if outcomes:
        table = table_of(Infraction)
        with session_scope(engine) as session:
            session.execute(
                update(table)
                .where(
                    table.c.id == bindparam("b_row_id"),
                    table.c.confirmation == Confirmation.PENDING.value,
                    # A later notification may have closed it otherwise meanwhile: that
                    # one is asked about anew.
                    table.c.updated_at == bindparam("b_seen"),
                )
                .values(
                    confirmation=bindparam("b_outcome"),
                    next_check_at=bindparam("b_check_at", type_=UtcDateTime),
                    check_attempts=table.c.check_attempts + 1,
                    confirmed_debited_cents=bindparam("b_stated"),
                    provider_updated_at=func.coalesce(
                        bindparam("b_closed_at", type_=UtcDateTime),
                        table.c.provider_updated_at,
                    ),
                ),
                outcomes,
            )
    if report.unconfirmed or report.mismatched:
        log.warning(
            "infraction_closings_not_confirmed",
            unconfirmed=len(report.unconfirmed),
            mismatched=len(report.mismatched),
        )
    return report


def _infraction_outcome(
    row_id: int,
    seen: datetime,
    outcome: Confirmation,
    stated: int | None = None,
    closed_at: datetime | None = None,
    *,
    check_at: datetime | None = None,
) -> dict[str, Any]:
    return {
        "b_row_id": row_id,
        "b_seen": seen,
        "b_outcome": outcome.value,
        "b_stated": stated,
        "b_closed_at": closed_at,
        "b_check_at": check_at,
    }


# Pix Automático: a recurrence (``rec``) or a recurring charge (``cobr``) notified is a claim
# about its state; it moves no money itself, but its state decides which cycles need a
# charge, so the state the matchers count is the one the API last stated
# (``confirmed_status``). The claim is looked up (``GET /rec/{idRec}``, ``GET
# /cobr/{txid}``) and agrees when the API says the object is, or was, in the state notified.

Claimed = type[Recurrence] | type[RecurringCharge]


class AutomaticoLookup(Protocol):
    def get_rec(self, id_rec: str) -> dict[str, Any]: ...
    def get_cobr(self, txid: str) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Claim:
    """A notified state waiting for its look-up; ``rank`` is the state's, so that an answer
    about it is not written over a newer notification stored meanwhile."""

    id: int
    key: str
    rank: int
    updated_at: datetime
    attempts: int
    status: str
    id_rec: str | None = None
    attempt_status: str | None = None
    attempt_end_to_end_id: str | None = None


def _claims(engine: Engine, model: Claimed, now: datetime, limit: int) -> list[Claim]:
    with session_scope(engine) as session:
        rows = session.execute(
            select(model)
            .where(
                col(model.confirmation) == Confirmation.PENDING.value,
                col(model.next_check_at) <= now,
            )
            .order_by(col(model.next_check_at))
            .limit(limit)
        ).scalars()
        return [
            Claim(
                id=row.id or 0,
                key=row.id_rec if isinstance(row, Recurrence) else row.txid,
                rank=row.rank,
                updated_at=as_utc(row.updated_at),
                attempts=row.check_attempts,
                status=row.status,
                id_rec=row.id_rec,
                attempt_status=getattr(row, "last_attempt_status", None),
                attempt_end_to_end_id=getattr(row, "last_attempt_end_to_end_id", None),
            )
            for row in rows
        ]


def _history(found: dict[str, Any]) -> list[Atualizacao]:
    """The API's ``atualizacao``: each state the object took, and when."""
    listed = found.get("atualizacao")
    entries = [e for e in listed if isinstance(e, dict)] if isinstance(listed, list) else []
    return [
        Atualizacao(status=str(e.get("status"))[:32], data=str(e.get("data"))[:64]) for e in entries
    ]


def _states_of(found: dict[str, Any]) -> set[str]:
    """Every state the API says the object is or was in; an object is always created
    (``CRIADA``) first."""
    return {"CRIADA", str(found["status"])} | {str(e.status) for e in _history(found)}


def _attempt_agrees(claim: Claim, found: dict[str, Any]) -> bool:
    """The charge's last attempt as notified: one with an endToEndId must be an attempt
    the API lists, and one notified paid must be paid there (a paid attempt stays paid)."""
    if claim.attempt_end_to_end_id is None:
        return True
    listed = [a for a in found.get("tentativas") or [] if isinstance(a, dict)]
    same = [a for a in listed if a.get("endToEndId") == claim.attempt_end_to_end_id]
    if not same:
        return False
    return claim.attempt_status != "PAGA" or any(a.get("status") == "PAGA" for a in same)


def _claim_agrees(model: Claimed, claim: Claim, found: dict[str, Any]) -> bool:
    """A notification that trails the API (notified approved, cancelled since) agrees: the
    API's state is its next fact. One of a state the API says it never was in does not."""
    if claim.status not in _states_of(found):
        return False
    if model is Recurrence:
        return True
    named = found.get("idRec")
    if claim.id_rec is not None and named is not None and named != claim.id_rec:
        return False
    return _attempt_agrees(claim, found)


def _ask(api: AutomaticoLookup, model: Claimed, key: str) -> dict[str, Any]:
    """The API's object, as an answer about that one: a 200 naming another, or without a
    status, confirms nothing."""
    found = api.get_rec(key) if model is Recurrence else api.get_cobr(key)
    name = "idRec" if model is Recurrence else "txid"
    if found.get(name) != key or not isinstance(found.get("status"), str):
        raise InvalidResponse(
            f"the answer about {name} names another, or has no status", status=200
        )
    return found


def _api_items(model: Claimed, found: dict[str, Any]) -> list[NewItem]:
    """The API's answer as a poll of it would store it: a newer state than the one
    notified becomes the row's, and a charge is expected as the API states it."""
    try:
        if model is Recurrence:
            return rec_callback_items(found)
        return [charge_item("cobr", found), *cobr_callback_items(found)]
    except (PayloadInvalid, ValueError):
        log.warning("automatico_answer_unreadable", table=model.__tablename__)
        return []


def confirm_pending_claims(
    engine: Engine,
    api: AutomaticoLookup,
    model: Claimed,
    *,
    grace: timedelta,
    limit: int = 100,
    now: datetime | None = None,
    on_new: OnNew = None,
) -> ConfirmReport:
    """Look up the recurrences (or recurring charges) whose notified state is due for a
    check. One the API does not know past the grace period is ``unconfirmed_webhook``; one
    whose state the API contradicts ``status_mismatch`` — both possible forgeries, raised by
    ``reconcile/matching/automatico.py``. Either way the row keeps the state the API
    states (``confirmed_status``) and its calendar: what the matchers count."""
    now = now or utcnow()
    report = ConfirmReport()
    outcomes: list[dict[str, Any]] = []
    for claim in _claims(engine, model, now, limit):
        stated: dict[str, Any] = {}
        api_cents: int | None = None
        try:
            found = _ask(api, model, claim.key)
        except NotFound:
            if now - claim.updated_at >= grace:
                outcome, check_at = Confirmation.UNCONFIRMED_WEBHOOK, None
                report.unconfirmed.append(claim.id)
            else:
                outcome, check_at = Confirmation.PENDING, now + _recheck_after(claim.attempts + 1)
                report.still_pending.append(claim.id)
        except STOP_ERRORS:
            report.interrupted = True
            break
        except ValueError:
            # Not an id the provider can issue (``_path_id``): nothing it could know.
            outcome, check_at = Confirmation.UNVERIFIABLE, None
            report.unverifiable.append(claim.id)
        except Exception as exc:
            log.error(
                "confirmation_failed",
                table=model.__tablename__,
                row=claim.id,
                error=type(exc).__name__,
                provider=isinstance(exc, ProviderError),
            )
            outcome, check_at = Confirmation.PENDING, now + MAX_RECHECK
            report.failed.append(claim.id)
        else:
            store_polled(engine, _api_items(model, found), on_new)
            api_cents = _api_cents(model, found)
            status = str(found["status"])
            when = latest_update(status, _history(found))
            stated = {"confirmed_status": status, "confirmed_status_at": read_timestamp(when)}
            if model is Recurrence:
                stated |= calendar_of(found)
            if _claim_agrees(model, claim, found):
                outcome, check_at = Confirmation.CONFIRMED, None
                report.confirmed.append(claim.id)
            else:
                outcome, check_at = Confirmation.STATUS_MISMATCH, None
                report.mismatched.append(claim.id)
                log.warning(
                    "notification_contradicted",
                    table=model.__tablename__,
                    row=claim.id,
                    notified=claim.status,
                    api=stated["confirmed_status"],
                )
        outcomes.append(
            {
                "claim": claim,
                "api_cents": api_cents,
                "confirmation": outcome.value,
                "confirmed_at": None if outcome is Confirmation.PENDING else now,
                "next_check_at": check_at,
                **stated,
            }
        )
    _record_claims(engine, model, outcomes)
    return report


def _api_cents(model: Claimed, found: dict[str, Any]) -> int | None:
    """The amount the API states for the object, as its poll would store it; none when it
    states none readable."""
    if model is Recurrence:
        cents = calendar_of(found).get("amount_cents")
        return cents if isinstance(cents, int) else None
    try:
        return to_cents(Charge.model_validate(found).valor.original)
    except (PayloadInvalid, ValueError, InvalidAmount):
        return None


def _record_claims(engine: Engine, model: Claimed, outcomes: list[dict[str, Any]]) -> None:
    table = table_of(model)
    with session_scope(engine) as session:
        for values in outcomes:
            claim: Claim = values.pop("claim")
            api_cents = values.pop("api_cents")
            recorded = session.execute(
                update(table)
                .where(
                    table.c.id == claim.id,
                    table.c.confirmation == Confirmation.PENDING.value,
                    # A newer notification stored meanwhile waits for its own look-up.
                    table.c.rank == claim.rank,
                )
                .values(check_attempts=table.c.check_attempts + 1, **values)
            )
            if recorded.rowcount and values["confirmation"] in DENIED:  # type: ignore[attr-defined]
                # The row holds the latest state only: the denial is kept with its day.
                record_denied(session, model, claim.id, api_cents, values["confirmed_at"])


def waive_confirmation(engine: Engine) -> int:
    """Policy "none": pending rows count as they are — except money whose amount nobody
    could read, which stays pending: without a look-up it can never count."""
    waived = 0
    with session_scope(engine) as session:
        for model in (PixReceived, AccountMovement, PixRefund):
            readable = (
                (col(model.amount_cents).is_not(None),) if model is not AccountMovement else ()
            )
            result = session.execute(
                update(model)
                .where(col(model.confirmation) == Confirmation.PENDING.value, *readable)
                .values(confirmation=Confirmation.NOT_REQUIRED.value, next_check_at=None)
            )
            waived += int(result.rowcount or 0)  # type: ignore[attr-defined]
        # A MED case's closing, as notified: its debit counts in the verdicts, by that
        # choice, but is never the API's (the bridge's API column).
        result = session.execute(
            update(Infraction)
            .where(col(Infraction.confirmation) == Confirmation.PENDING.value)
            .values(confirmation=Confirmation.NOT_REQUIRED.value)
        )
        waived += int(result.rowcount or 0)  # type: ignore[attr-defined]
        for claimed in (Recurrence, RecurringCharge):
            result = session.execute(
                update(claimed)
                .where(col(claimed.confirmation) == Confirmation.PENDING.value)
                .values(
                    confirmation=Confirmation.NOT_REQUIRED.value,
                    confirmed_status=col(claimed.status),
                    confirmed_status_at=col(claimed.status_at),
                    next_check_at=None,
                )
            )
            waived += int(result.rowcount or 0)  # type: ignore[attr-defined]
    return waived


def _count(subject: str, report: ConfirmReport) -> None:
    for outcome in LISTS:
        if outcome != "skipped":
            CONFIRMATIONS.labels(subject, outcome).inc(len(getattr(report, outcome)))


def _drain(
    subject: str,
    step: Callable[[], ConfirmReport],
    batch: int,
    into: ConfirmReport,
    rounds: int | None = None,
) -> None:
    """Run ``step`` until a batch comes back short: nothing more is due now. ``rounds``:
    at most that many batches, the rest left to the next pass."""
    done = 0
    while True:
        report = step()
        _count(subject, report)
        into.extend(report)
        done += 1
        if report.interrupted or report.handled < batch or done == rounds:
            return


def confirm_all(
    engine: Engine,
    pix: PixLookup | None,
    payments: PaymentLookup | None,
    settings: Settings,
    *,
    listed_until: datetime | None = None,
    on_new: OnNew = None,
    automatico: AutomaticoLookup | None = None,
) -> ConfirmReport:
    """Every movement whose look-up is due, by the configured policy: the worker's
    ``confirm`` job and the nightly run both come here. ``listed_until``: Pix and refunds
    written after it wait for the next listing of ``GET /pix`` instead. ``on_new`` gets
    the ids of items a look-up stored (``confirm_pending_refunds``,
    ``confirm_pending_claims``). ``automatico``: the QR code API's Pix Automático, to look
    up notified recurrences and recurring charges."""
    report = ConfirmReport()
    if settings.confirm_policy == "none":
        waive_confirmation(engine)
        return report
    grace = timedelta(seconds=settings.confirm_grace_seconds)
    batch = settings.confirm_batch_size
    if pix is not None:
        _drain(
            "pix",
            lambda: confirm_pending_pix(
                engine, pix, grace=grace, limit=batch, listed_until=listed_until
            ),
            batch,
            report,
        )
        _drain(
            "refund",
            lambda: confirm_pending_refunds(
                engine, pix, grace=grace, limit=batch, listed_until=listed_until, on_new=on_new
            ),
            batch,
            report,
        )
    if payments is not None:
        _drain(
            "movement",
            lambda: confirm_pending_movements(engine, payments, pix, grace=grace, limit=batch),
            batch,
            report,
        )
    if isinstance(payments, InfractionLookup):
        # The accounts API answers for MED cases too. Each case asked waits before it is
        # asked again, so the batches run out; bounded all the same, since a case whose
        # notification changes while it is asked is due again at once.
        _drain(
            "infraction",
            lambda: confirm_closed_infractions(engine, payments, grace=grace, limit=batch),
            batch,
            report,
            rounds=MED_ROUNDS,
        )
    if automatico is not None:
        for subject, claimed in (("recurrence", Recurrence), ("recurring_charge", RecurringCharge)):
            step = partial(
                confirm_pending_claims,
                engine,
                automatico,
                claimed,
                grace=grace,
                limit=batch,
                on_new=on_new,
            )
            _drain(subject, step, batch, report)
    return report
