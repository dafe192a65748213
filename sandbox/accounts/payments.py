"""Pix payouts (cash-outs) keyed by idempotency key, shaped like TRANSFER ``data``.

Life cycle: PROCESSING → LIQUIDATED | REJECTED | CANCELED; a LIQUIDATED payout can then
be returned by the receiver (PARTIALLY_REFUNDED, REFUNDED). Money moves only when a payout
is LIQUIDATED (debit) and when a return arrives (credit).
"""

from __future__ import annotations

import copy
import hashlib
import random
import threading
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, Final

from sandbox.accounts.statement import Movement
from sandbox.clock import Clock, format_rfc3339, to_millis
from sandbox.ids import new_end_to_end_id, new_return_id
from sandbox.ledger import format_amount

_CENT: Final = Decimal("0.01")
# A fictitious receiving PSP for payouts to a Pix key (the sandbox has no DICT).
_CREDITOR_ISPB: Final = "18236120"


class IdempotencyConflict(Exception):
    """The key was used before for a different amount or creditor."""


@dataclass(frozen=True, slots=True)
class PaymentRequest:
    idempotency_key: str
    amount: Decimal
    pix_key: str | None = None
    creditor_account: dict[str, Any] | None = None
    description: str | None = None

    def fingerprint(self) -> tuple[Any, ...]:
        account = self.creditor_account or {}
        return (
            self.amount,
            self.pix_key,
            tuple(account.get(k) for k in ("ispb", "issuer", "number", "accountType")),
        )


@dataclass(slots=True)
class _Refund:
    end_to_end_id: str
    amount: Decimal
    at: datetime


@dataclass(slots=True)
class _Payment:
    id: int
    request: PaymentRequest
    end_to_end_id: str
    creditor: dict[str, Any]
    created_at: datetime
    status: str = "PROCESSING"
    error_code: str | None = None
    settled_at: datetime | None = None
    refunds: list[_Refund] = field(default_factory=list)

    def refunded(self) -> Decimal:
        return sum((r.amount for r in self.refunds), Decimal(0))


def _payment_id(created_at: datetime, nth: int) -> int:
    """A provider's payment id is unique for good, not per run of this sandbox: a
    receiver fed by two sandboxes in turn (one scenario, then another) must not see two
    payouts under one id, which its inbox would take for repeats. The creation instant
    in milliseconds, and the payment's number within it."""
    return int(created_at.timestamp() * 1000) * 1000 + nth % 1000


def _creditor_for_key(pix_key: str) -> dict[str, Any]:
    # Deterministic per key, so repeated payouts to one key show one account.
    number = int(hashlib.sha256(pix_key.encode()).hexdigest()[:8], 16) % 100_000_000
    return {
        "ispb": _CREDITOR_ISPB,
        "issuer": "0001",
        "number": str(number),
        "accountType": "CACC",
        "document": None,
        "name": "Recebedor Sandbox",
    }


class PaymentBook:
    def __init__(
        self, *, ispb: str, debtor: dict[str, Any], rng: random.Random, clock: Clock
    ) -> None:
        self._lock = threading.Lock()
        self._ispb = ispb
        self._debtor = debtor
        self._rng = rng
        self._clock = clock
        self._by_key: dict[str, _Payment] = {}
        self._by_e2e: dict[str, _Payment] = {}

    def debtor_account(self) -> dict[str, Any]:
        """The merchant's own account, as payouts show it."""
        return dict(self._debtor)

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_key)

    def create(self, request: PaymentRequest) -> tuple[dict[str, Any], bool]:
        """The payment for this key and whether it was created now (False: a repeat)."""
        format_amount(request.amount)  # validates: positive, 2 places, in range
        now = to_millis(self._clock())
        with self._lock:
            existing = self._by_key.get(request.idempotency_key)
            if existing is not None:
                if existing.request.fingerprint() != request.fingerprint():
                    raise IdempotencyConflict(request.idempotency_key)
                return self._render(existing), False
            e2e = new_end_to_end_id(self._ispb, now, self._rng)
            while e2e in self._by_e2e:
                e2e = new_end_to_end_id(self._ispb, now, self._rng)
            creditor = (
                dict(request.creditor_account)
                if request.creditor_account is not None
                else _creditor_for_key(str(request.pix_key))
            )
            payment = _Payment(_payment_id(now, len(self._by_key) + 1), request, e2e, creditor, now)
            self._by_key[request.idempotency_key] = payment
            self._by_e2e[e2e] = payment
            return self._render(payment), True

    def get_by_key(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            payment = self._by_key.get(key)
            return self._render(payment) if payment is not None else None

    def get_by_e2e(self, e2e: str) -> dict[str, Any] | None:
        with self._lock:
            payment = self._by_e2e.get(e2e)
            return self._render(payment) if payment is not None else None

    def _transition(self, key: str, allowed: frozenset[str], status: str) -> _Payment:
        payment = self._by_key[key]
        if payment.status not in allowed:
            raise ValueError(f"payment {key!r} is {payment.status}, cannot become {status}")
        payment.status = status
        return payment

    def settle(self, key: str) -> dict[str, Any]:
        with self._lock:
            payment = self._transition(key, frozenset({"PROCESSING"}), "LIQUIDATED")
            payment.settled_at = to_millis(self._clock())
            return self._render(payment)

    def reject(self, key: str, error_code: str) -> dict[str, Any]:
        with self._lock:
            payment = self._transition(key, frozenset({"PROCESSING"}), "REJECTED")
            payment.error_code = error_code
            return self._render(payment)

    def cancel(self, key: str) -> dict[str, Any]:
        with self._lock:
            return self._render(self._transition(key, frozenset({"PROCESSING"}), "CANCELED"))

    def refund(self, key: str, amount: Decimal) -> dict[str, Any]:
        """The receiver returns ``amount`` of a settled payout (a credit to the merchant)."""
        format_amount(amount)
        now = to_millis(self._clock())
        with self._lock:
            payment = self._by_key[key]
            if payment.status not in ("LIQUIDATED", "PARTIALLY_REFUNDED"):
                raise ValueError(f"payment {key!r} is {payment.status}; only settled ones return")
            if payment.refunded() + amount > payment.request.amount:
                raise ValueError("refunds would exceed the payment amount")
            rtr = new_return_id(_CREDITOR_ISPB, now, self._rng)
            payment.refunds.append(_Refund(rtr, amount, now))
            full = payment.refunded() == payment.request.amount
            payment.status = "REFUNDED" if full else "PARTIALLY_REFUNDED"
            return self._render(payment)

    def movements(self) -> list[Movement]:
        with self._lock:
            payments = list(self._by_key.values())
            result: list[Movement] = []
            for p in payments:
                if p.settled_at is None:
                    continue
                key = p.request.idempotency_key
                result.append(
                    Movement(
                        at=p.settled_at,
                        ref=f"PAYOUT-{p.end_to_end_id}",
                        credit=False,
                        category="PIX_PAYMENT",
                        amount=p.request.amount,
                        end_to_end_id=p.end_to_end_id,
                        idempotency_key=key,
                    )
                )
                result.extend(
                    Movement(
                        at=r.at,
                        ref=f"PAYOUT_RETURN-{r.end_to_end_id}",
                        credit=True,
                        category="PIX_PAYMENT_REFUND",
                        amount=r.amount,
                        end_to_end_id=r.end_to_end_id,
                        original_end_to_end_id=p.end_to_end_id,
                        idempotency_key=key,
                    )
                    for r in p.refunds
                )
            return result

    def _render(self, p: _Payment) -> dict[str, Any]:
        return {
            "id": p.id,
            "idempotencyKey": p.request.idempotency_key,
            "endToEndId": p.end_to_end_id,
            "pixKey": p.request.pix_key,
            "txId": None,
            "status": p.status,
            "errorCode": p.error_code,
            "creditDebitType": "DEBIT",
            "localInstrument": "DICT" if p.request.pix_key is not None else "MANU",
            "description": p.request.description,
            "createdAt": format_rfc3339(p.created_at),
            "creditorAccount": copy.deepcopy(p.creditor),
            "debtorAccount": dict(self._debtor),
            "payment": {"currency": "BRL", "amount": p.request.amount.quantize(_CENT)},
            "refunds": [
                {
                    "endToEndId": r.end_to_end_id,
                    "status": "LIQUIDATED",
                    "errorCode": None,
                    "pixRefundAmount": r.amount.quantize(_CENT),
                    "createdAt": format_rfc3339(r.at),
                }
                for r in p.refunds
            ],
            "webhookType": "TRANSFER",
        }
