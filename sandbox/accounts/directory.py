"""The simple lists of the accounts API: customers, invoices and registered webhooks."""

from __future__ import annotations

import copy
import threading
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any, Final

from sandbox.clock import Clock, format_rfc3339
from sandbox.ledger import format_amount

# Types the provider notifies; INVOICE exists too though its body shape is unknown.
WEBHOOK_TYPES: Final = frozenset(
    {"TRANSFER", "RECEIVE", "REFUND", "CASHOUT", "INFRACTION", "INVOICE"}
)
INVOICE_STATUSES: Final = frozenset({"PENDING", "PAID", "CANCELED", "OVERDUE"})


@dataclass(frozen=True, slots=True)
class WebhookRegistration:
    type: str
    url: str
    secret_header_name: str | None
    secret_header_value: str | None
    created_at: str

    def public(self) -> dict[str, Any]:
        # The secret is write-only, as with real providers: the list shows its header only.
        header = {"name": self.secret_header_name} if self.secret_header_name else None
        return {
            "type": self.type,
            "url": self.url,
            "secretHeader": header,
            "createdAt": self.created_at,
        }


class Directory:
    def __init__(self, *, clock: Clock) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._customers: list[dict[str, Any]] = []
        self._invoices: list[dict[str, Any]] = []
        self._webhooks: dict[str, WebhookRegistration] = {}

    def add_customer(self, name: str, document: str, email: str | None = None) -> dict[str, Any]:
        with self._lock:
            customer = {
                "id": f"cus-{len(self._customers) + 1:06d}",
                "name": name,
                "document": document,
                "email": email,
                "createdAt": format_rfc3339(self._clock()),
            }
            self._customers.append(customer)
            return dict(customer)

    def add_invoice(
        self,
        amount: Decimal,
        *,
        customer_id: str | None = None,
        due_date: date | None = None,
        status: str = "PENDING",
    ) -> dict[str, Any]:
        format_amount(amount)
        if status not in INVOICE_STATUSES:
            raise ValueError(f"unknown invoice status {status!r}")
        with self._lock:
            invoice = {
                "id": f"inv-{len(self._invoices) + 1:06d}",
                "status": status,
                "amount": amount.quantize(Decimal("0.01")),
                "customerId": customer_id,
                "dueDate": due_date.isoformat() if due_date is not None else None,
                "createdAt": format_rfc3339(self._clock()),
            }
            self._invoices.append(invoice)
            return dict(invoice)

    def customers(self) -> list[dict[str, Any]]:
        with self._lock:
            return copy.deepcopy(self._customers)

    def invoices(self) -> list[dict[str, Any]]:
        with self._lock:
            return copy.deepcopy(self._invoices)

    def register_webhook(
        self, kind: str, url: str, header_name: str | None = None, header_value: str | None = None
    ) -> WebhookRegistration:
        if kind not in WEBHOOK_TYPES:
            raise ValueError(f"unknown webhook type {kind!r}")
        if (header_name is None) != (header_value is None):
            raise ValueError("a secret header has a name and a value")
        entry = WebhookRegistration(
            kind, url, header_name, header_value, format_rfc3339(self._clock())
        )
        with self._lock:
            self._webhooks[kind] = entry  # one URL per type; registering again replaces it
        return entry

    def webhook(self, kind: str) -> WebhookRegistration | None:
        with self._lock:
            return self._webhooks.get(kind)

    def webhooks(self) -> list[WebhookRegistration]:
        with self._lock:
            return sorted(self._webhooks.values(), key=lambda w: w.type)
