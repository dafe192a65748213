"""The accounts (cash-out) side of the simulated provider, driven by tests and the demo.

One ``AccountsState`` hangs off each ``SandboxProvider`` as ``provider.accounts`` and
reads the provider's Pix ledger, so a Pix received on the QR code side is a credit here
(less the provider's fee per Pix received, when it charges one).
It has its own OAuth clients, faults and request counts, as the real API family has its
own base URL and credentials.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

from sandbox.accounts.defaults import (
    DEFAULT_ACCOUNT_ID,
    DEFAULT_ACCOUNT_ISSUER,
    DEFAULT_ACCOUNT_NUMBER,
    DEFAULT_ACCOUNTS_CLIENT_ID,
    DEFAULT_ACCOUNTS_CLIENT_SECRET,
    DEFAULT_ACCOUNTS_TOKEN_LIFETIME_SECONDS,
    DEFAULT_MERCHANT_DOCUMENT,
    DEFAULT_MERCHANT_NAME,
    DEFAULT_OPENING_BALANCE,
    DEFAULT_TOKEN_RATE_LIMIT,
    DEFAULT_TOKEN_RATE_WINDOW_SECONDS,
)
from sandbox.accounts.directory import Directory
from sandbox.accounts.infractions import DebitLine, InfractionBook
from sandbox.accounts.payments import PaymentBook, PaymentRequest
from sandbox.accounts.statement import (
    FEE_BOOKINGS,
    FeeBooking,
    Movement,
    PixFee,
    balance_of,
    pix_movements,
    statement_lines,
)
from sandbox.accounts.tokens import AccountsClient, AccountsTokens
from sandbox.clock import Clock, parse_rfc3339, to_millis
from sandbox.faults import ScriptedEndpoints
from sandbox.ledger import PixLedger, format_amount


class AccountsState(ScriptedEndpoints):
    def __init__(
        self,
        *,
        ledger: PixLedger,
        ispb: str,
        clock: Clock,
        seed: int | None = None,
        account_id: str = DEFAULT_ACCOUNT_ID,
        opening_balance: Decimal = DEFAULT_OPENING_BALANCE,
        pix_received_fee: Decimal | None = None,
        fee_booking: FeeBooking = "line",
        register_default_client: bool = True,
    ) -> None:
        super().__init__()
        self.account_id = account_id
        self.opening_balance = opening_balance
        self.clock = clock
        # The tariff in force, and the one each Pix seen so far was booked under (by
        # endToEndId): changing the tariff never rewrites the fees already charged.
        self._fee_lock = threading.Lock()
        self._tariff = _tariff(pix_received_fee, fee_booking)
        self._fees: dict[str, PixFee | None] = {}
        # Pix whose statement line the provider books later than the Pix (by endToEndId).
        self._booked_at: dict[str, datetime] = {}
        # "ms" is what the provider sends; "s" lets tests prove clients accept both.
        self.expires_at_unit: Literal["ms", "s"] = "ms"
        self._ledger = ledger
        self.tokens = AccountsTokens(
            lifetime_seconds=DEFAULT_ACCOUNTS_TOKEN_LIFETIME_SECONDS,
            rate_limit=DEFAULT_TOKEN_RATE_LIMIT,
            rate_window_seconds=DEFAULT_TOKEN_RATE_WINDOW_SECONDS,
            clock=clock,
        )
        debtor = {
            "ispb": ispb,
            "issuer": DEFAULT_ACCOUNT_ISSUER,
            "number": DEFAULT_ACCOUNT_NUMBER,
            "accountType": "CACC",
            "document": DEFAULT_MERCHANT_DOCUMENT,
            "name": DEFAULT_MERCHANT_NAME,
        }
        # A generator of its own: payouts must not shift the QR side's seeded ids.
        rng = random.Random(seed)
        self.payments = PaymentBook(ispb=ispb, debtor=debtor, rng=rng, clock=clock)
        self.infractions = InfractionBook(clock=clock)
        self.directory = Directory(clock=clock)
        if register_default_client:
            self.register_client(
                DEFAULT_ACCOUNTS_CLIENT_ID, DEFAULT_ACCOUNTS_CLIENT_SECRET, [account_id]
            )

    # -- OAuth, faults, accounting -----------------------------------------------------

    def register_client(
        self, client_id: str, secret: str, account_ids: Iterable[str]
    ) -> AccountsClient:
        return self.tokens.register_client(client_id, secret, frozenset(account_ids))

    def expire_tokens(self) -> None:
        self.tokens.expire_all()

    # -- Payouts -----------------------------------------------------------------------

    def create_payment(
        self,
        idempotency_key: str,
        amount: Decimal,
        *,
        pix_key: str | None = None,
        creditor_account: dict[str, Any] | None = None,
        description: str | None = None,
    ) -> dict[str, Any]:
        """What ``POST /pix/payments`` does, for tests that need a payout without HTTP."""
        request = PaymentRequest(idempotency_key, amount, pix_key, creditor_account, description)
        return self.payments.create(request)[0]

    def settle_payment(self, key: str) -> dict[str, Any]:
        return self.payments.settle(key)

    def reject_payment(self, key: str, error_code: str = "AC03") -> dict[str, Any]:
        return self.payments.reject(key, error_code)

    def cancel_payment(self, key: str) -> dict[str, Any]:
        return self.payments.cancel(key)

    def refund_payment(self, key: str, amount: Decimal) -> dict[str, Any]:
        return self.payments.refund(key, amount)

    # -- Infractions (MED) -------------------------------------------------------------

    def pix(self, end_to_end_id: str) -> dict[str, Any]:
        """A Pix received on the QR code side (the shared ledger); ``KeyError`` if unknown."""
        pix = self._ledger.get(end_to_end_id)
        if pix is None:
            raise KeyError(f"no Pix received with endToEndId {end_to_end_id}")
        return pix

    def open_infraction(
        self,
        end_to_end_id: str,
        amount: Decimal,
        *,
        reason: str = "FRAUD",
        blocked: Decimal | None = None,
    ) -> dict[str, Any]:
        """Open a MED case against a Pix the merchant received (on the QR code side),
        blocking ``blocked`` of it as a precaution (none by default; no money moves)."""
        pix = self.pix(end_to_end_id)
        format_amount(amount)
        if amount > Decimal(pix["valor"]):
            raise ValueError("an infraction cannot exceed the Pix amount")
        if blocked is not None:
            format_amount(blocked)
        return self.infractions.open(
            end_to_end_id, amount, reason, blocked=blocked if blocked is not None else Decimal(0)
        )

    def close_infraction(
        self, infraction_id: str, debit: bool, *, debit_line: DebitLine = "full"
    ) -> dict[str, Any]:
        """Close a case: ``debit`` (AGREED) debits the disputed amount, in a statement line
        that names the case and the Pix (``full``), only the Pix's endToEndId
        (``end_to_end_id``) or neither (``bare``)."""
        return self.infractions.close(infraction_id, debit=debit, debit_line=debit_line)

    # -- Invoices, customers, webhooks -------------------------------------------------

    def add_customer(self, name: str, document: str, email: str | None = None) -> dict[str, Any]:
        return self.directory.add_customer(name, document, email)

    def add_invoice(self, amount: Decimal, **options: Any) -> dict[str, Any]:
        return self.directory.add_invoice(amount, **options)

    # -- Fees (tarifas) ----------------------------------------------------------------

    @property
    def pix_received_fee(self) -> PixFee | None:
        """The fee charged from now on per Pix received (``None``: no fee)."""
        with self._fee_lock:
            return self._tariff

    def set_pix_received_fee(self, amount: Decimal | None, booking: FeeBooking = "line") -> None:
        """Charge ``amount`` per Pix received from now on (``None`` or zero: no fee), as a
        statement line of its own (``"line"``) or netted from the Pix's credit line
        (``"netted"``). Pix already received keep the fee they were booked with."""
        tariff = _tariff(amount, booking)
        with self._fee_lock:
            self._seen(self._ledger.all())
            self._tariff = tariff

    def fee_charged(self, end_to_end_id: str) -> Decimal:
        """The fee the provider took on a Pix received (zero when none)."""
        pix = self.pix(end_to_end_id)
        with self._fee_lock:
            tariff = self._seen([pix])[end_to_end_id]
        return tariff.on(Decimal(pix["valor"])) if tariff is not None else Decimal(0)

    def _seen(self, pix_bodies: Iterable[dict[str, Any]]) -> dict[str, PixFee | None]:
        """Pin the tariff in force on every Pix not seen before; callers hold the lock."""
        for pix in pix_bodies:
            self._fees.setdefault(str(pix["endToEndId"]), self._tariff)
        return self._fees

    # -- Statement booking lag ---------------------------------------------------------

    def book_later(self, end_to_end_id: str, booked_at: datetime) -> None:
        """Book a Pix received (and its fee) in the statement at ``booked_at`` instead of
        its ``horario``, as providers whose statement lags do: a Pix at 23:59:30 booked a
        minute later is on the next day's statement. The QR code API keeps its horario."""
        horario = _instant_of(self.pix(end_to_end_id))
        if booked_at < horario:
            raise ValueError("a Pix cannot be booked before it happened")
        with self._fee_lock:
            self._booked_at[end_to_end_id] = to_millis(booked_at)

    # -- Balance and statement ---------------------------------------------------------

    def movements(self) -> list[Movement]:
        pix = self._ledger.all()
        with self._fee_lock:
            fees = dict(self._seen(pix))
            booked_at = dict(self._booked_at)
        return [
            *pix_movements(pix, fees, booked_at),
            *self.payments.movements(),
            *self.infractions.movements(),
        ]

    def balance(self) -> Decimal:
        """Opening balance + credits - debits, from the same movements as the statement."""
        return balance_of(self.opening_balance, self.movements()).quantize(Decimal("0.01"))

    def statement(
        self, start: datetime | None = None, end: datetime | None = None
    ) -> list[dict[str, Any]]:
        return statement_lines(self.opening_balance, self.movements(), start, end)


def _instant_of(pix: dict[str, Any]) -> datetime:
    horario = parse_rfc3339(str(pix["horario"]))
    if horario is None:
        raise ValueError(f"unreadable horario in the ledger: {pix['horario']!r}")
    return horario


def _tariff(amount: Decimal | None, booking: str) -> PixFee | None:
    if booking not in FEE_BOOKINGS:
        raise ValueError(f"a fee is booked as one of {', '.join(FEE_BOOKINGS)}, not {booking!r}")
    if amount is None or amount == 0:
        return None
    format_amount(amount)  # exact, positive, within the spec's range
    return PixFee(amount, "netted" if booking == "netted" else "line")
