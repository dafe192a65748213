"""Confirm-by-API (docs/design.md §1.5): a webhook is a trigger, not proof. Every notified movement
is looked up with the provider's API before its money counts; one the API still denies
after the grace period is flagged ``unconfirmed_webhook`` (a possible forgery), one it
knows with another amount ``amount_mismatch``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import Engine, select, update
from sqlmodel import col

from reconcile.db import session_scope
from reconcile.logs import get_logger
from reconcile.models import AccountMovement, Confirmation, PixReceived
from reconcile.money import InvalidAmount, parse_amount, to_cents
from reconcile.provider.errors import NotFound, ProviderUnavailable
from reconcile.settings import Settings
from reconcile.timeutil import as_utc, utcnow

log = get_logger(__name__)

# Unknown to the API inside the grace period: look again after 30 s, 1 min, 2 min, …
FIRST_RECHECK = timedelta(seconds=30)
MAX_RECHECK = timedelta(minutes=10)
UNKNOWN_AMOUNT = -1
"""What a look-up returns when the API confirms the movement but states no amount."""


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
    interrupted: bool = False
    """The provider became unavailable; the rest waits for the next run."""

    def extend(self, other: ConfirmReport) -> None:
        for name in ("confirmed", "unconfirmed", "mismatched", "still_pending", "skipped"):
            getattr(self, name).extend(getattr(other, name))
        self.interrupted = self.interrupted or other.interrupted

    @property
    def handled(self) -> int:
        return sum(
            map(
                len,
                (
                    self.confirmed,
                    self.unconfirmed,
                    self.mismatched,
                    self.still_pending,
                    self.skipped,
                ),
            )
        )


def _recheck_after(attempts: int) -> timedelta:
    return min(FIRST_RECHECK * (1 << min(max(attempts - 1, 0), 16)), MAX_RECHECK)


def money_cents(value: object) -> int:
    try:
        return to_cents(parse_amount(value))
    except InvalidAmount:
        return UNKNOWN_AMOUNT


def confirm_pending(
    engine: Engine,
    model: type[PixReceived] | type[AccountMovement],
    lookup: Callable[[Due], int | None],
    *,
    grace: timedelta,
    extra_columns: tuple[str, ...] = (),
    limit: int = 100,
    now: datetime | None = None,
) -> ConfirmReport:
    """Look up the rows due for a check; API calls happen outside any transaction.
    ``lookup`` returns the amount the API states (cents, or ``UNKNOWN_AMOUNT``), raises
    ``NotFound``, or returns ``None`` when nothing can look this row up now."""
    now = now or utcnow()
    report = ConfirmReport()
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
        due = [
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
    outcomes: list[tuple[int, str, int | None, datetime | None]] = []
    for row in due:
        try:
            api_cents = lookup(row)
        except NotFound:
            if now - row.created_at >= grace:
                outcomes.append((row.id, Confirmation.UNCONFIRMED_WEBHOOK.value, None, None))
                report.unconfirmed.append(row.id)
            else:
                retry_at = now + _recheck_after(row.attempts + 1)
                outcomes.append((row.id, Confirmation.PENDING.value, None, retry_at))
                report.still_pending.append(row.id)
            continue
        except ProviderUnavailable:
            report.interrupted = True
            break
        if api_cents is None:
            # No API can vouch for this one now (e.g. the QR code API is not configured); look
            # again much later rather than blocking the rows behind it.
            outcomes.append((row.id, Confirmation.PENDING.value, None, now + MAX_RECHECK * 6))
            report.skipped.append(row.id)
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
        _record(engine, model, outcomes, now)
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
    model: type[PixReceived] | type[AccountMovement],
    outcomes: list[tuple[int, str, int | None, datetime | None]],
    now: datetime,
) -> None:
    with session_scope(engine) as session:
        for row_id, confirmation, amount_cents, next_check_at in outcomes:
            settled = confirmation != Confirmation.PENDING.value
            session.execute(
                update(model)
                .where(
                    col(model.id) == row_id,
                    # A concurrent confirmer may have settled it already; first answer wins.
                    col(model.confirmation) == Confirmation.PENDING.value,
                )
                .values(
                    confirmation=confirmation,
                    confirmed_amount_cents=amount_cents,
                    confirmed_at=now if settled else None,
                    next_check_at=next_check_at,
                    check_attempts=model.check_attempts + 1,
                )
            )


def confirm_pending_pix(
    engine: Engine, api: PixLookup, *, grace: timedelta, limit: int = 100
) -> ConfirmReport:
    return confirm_pending(
        engine,
        PixReceived,
        lambda due: money_cents(api.get_pix(due.fields["end_to_end_id"]).get("valor")),
        grace=grace,
        extra_columns=("end_to_end_id",),
        limit=limit,
    )


def confirm_pending_movements(
    engine: Engine,
    payments: PaymentLookup,
    pix: PixLookup | None,
    *,
    grace: timedelta,
    limit: int = 100,
) -> ConfirmReport:
    """Payouts (TRANSFER, CASHOUT) by idempotency key or endToEndId; credits (RECEIVE) by
    the QR code API; refunds by the payout they refund, else by the Pix they refund."""

    def lookup(due: Due) -> int | None:
        kind, key, e2e = (due.fields[n] for n in ("type", "idempotency_key", "end_to_end_id"))
        if kind in ("TRANSFER", "CASHOUT"):
            found = payments.get_payment_by_key(key) if key else payments.get_payment(e2e)
            return money_cents((found.get("payment") or {}).get("amount"))
        if kind == "RECEIVE":
            return money_cents(pix.get_pix(e2e).get("valor")) if pix and e2e else None
        if kind == "REFUND" and e2e:
            try:
                payments.get_payment(e2e)
            except NotFound:
                if pix is None:
                    raise
                pix.get_pix(e2e)
            # The refunded original is known; refund amounts are checked by reconciliation.
            return UNKNOWN_AMOUNT
        return None

    return confirm_pending(
        engine,
        AccountMovement,
        lookup,
        grace=grace,
        extra_columns=("type", "idempotency_key", "end_to_end_id"),
        limit=limit,
    )


def waive_confirmation(engine: Engine) -> int:
    """Policy "none": pending rows count as they are."""
    waived = 0
    with session_scope(engine) as session:
        for model in (PixReceived, AccountMovement):
            result = session.execute(
                update(model)
                .where(col(model.confirmation) == Confirmation.PENDING.value)
                .values(confirmation=Confirmation.NOT_REQUIRED.value, next_check_at=None)
            )
            waived += int(result.rowcount or 0)  # type: ignore[attr-defined]
    return waived


def _drain(step: Callable[[], ConfirmReport], batch: int, into: ConfirmReport) -> None:
    """Run ``step`` until a batch comes back short: nothing more is due now."""
    while True:
        report = step()
        into.extend(report)
        if report.interrupted or report.handled < batch:
            return


def confirm_all(
    engine: Engine,
    pix: PixLookup | None,
    payments: PaymentLookup | None,
    settings: Settings,
) -> ConfirmReport:
    """Every movement whose look-up is due, by the configured policy: the worker's
    ``confirm`` job and the nightly run both come here."""
    report = ConfirmReport()
    if settings.confirm_policy == "none":
        waive_confirmation(engine)
        return report
    grace = timedelta(seconds=settings.confirm_grace_seconds)
    batch = settings.confirm_batch_size
    if pix is not None:
        _drain(lambda: confirm_pending_pix(engine, pix, grace=grace, limit=batch), batch, report)
    if payments is not None:
        _drain(
            lambda: confirm_pending_movements(engine, payments, pix, grace=grace, limit=batch),
            batch,
            report,
        )
    return report
