"""Client of the provider's accounts (cash-out) API: payouts, balance, statement, MED.

Its own base URL and OAuth clients; every call carries ``x-account-id``. Lists come as
``{"meta": {..., "nextPage"}, "data": [...]}`` and are walked to the end lazily. Amounts
are returned as ``Decimal`` whether the provider sent ``250.5`` or ``"250.50"``.
Statement and some list paths are not public: ``AccountsPaths`` (in
``accounts_shapes``) keeps every path in one place so a deployment can correct them.
For mutual TLS pass ``http_client=httpx.Client(verify=ssl_context)`` where the context
trusts the provider's CA and holds the client certificate (``load_cert_chain``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any, Final
from urllib.parse import quote

import httpx

from reconcile.provider.accounts_shapes import (
    AccountsPaths,
    money,
    payment_with_money,
    walk_pages,
    with_money,
)
from reconcile.provider.client import ProviderClient
from reconcile.provider.errors import InvalidResponse, ProviderError
from reconcile.provider.paging import rfc3339
from reconcile.provider.retry import RetryPolicy
from reconcile.provider.transport import QueryParams

EXPIRED_TOKEN_TYPES: Final = frozenset({"onz-0018"})
MAX_PAGE_SIZE: Final = 500
_E2EID_RE: Final = re.compile(r"[A-Za-z0-9]{1,64}")
_CENT: Final = Decimal("0.01")


class IdempotencyConflict(ProviderError):
    """409: the idempotency key was already used for a different payment."""


class AccountsApi(ProviderClient):
    """Payout look-ups and creation, balance, statement, infractions, lists, webhooks."""

    API = "accounts"

    def __init__(
        self,
        base_url: str,
        client_id: str,
        client_secret: str,
        account_id: str,
        *,
        http_client: httpx.Client | None = None,
        timeout: float = 10.0,
        token_url: str | None = None,
        retry: RetryPolicy | None = None,
        token_refresh_margin: float = 30.0,
        page_size: int = 100,
        paths: AccountsPaths | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        if not 1 <= page_size <= MAX_PAGE_SIZE:
            raise ValueError(f"page_size must be between 1 and {MAX_PAGE_SIZE}")
        self.paths = paths if paths is not None else AccountsPaths()
        self._page_size = page_size
        super().__init__(
            base_url,
            client_id,
            client_secret,
            oauth_path=self.paths.token,
            http_client=http_client,
            timeout=timeout,
            token_url=token_url,
            retry=retry,
            token_refresh_margin=token_refresh_margin,
            clock=clock,
            wall_clock=wall_clock,
            headers={"x-account-id": account_id},
            expired_token_types=EXPIRED_TOKEN_TYPES,
        )

    # -- Payouts -----------------------------------------------------------------------

    def get_payment(self, end_to_end_id: str) -> dict[str, Any]:
        """A payout by endToEndId; ``NotFound`` when the provider does not know it."""
        if not _E2EID_RE.fullmatch(end_to_end_id):
            raise ValueError(f"not an endToEndId: {end_to_end_id!r}")
        path = self.paths.payment.format(end_to_end_id=quote(end_to_end_id, safe=""))
        return payment_with_money(self._api.get_json(path, endpoint=self.paths.payment))

    def get_payment_by_key(self, idempotency_key: str) -> dict[str, Any]:
        """A payout by the idempotency key it was created with; ``NotFound`` if unknown."""
        if not idempotency_key:
            raise ValueError("idempotency_key is empty")
        path = self.paths.payment_by_key.format(key=quote(idempotency_key, safe=""))
        return payment_with_money(self._api.get_json(path, endpoint=self.paths.payment_by_key))

    def create_payment(
        self,
        idempotency_key: str,
        amount: Decimal,
        *,
        pix_key: str | None = None,
        creditor_account: Mapping[str, Any] | None = None,
        description: str | None = None,
    ) -> dict[str, Any]:
        """Create (or find again) the payout for ``idempotency_key``.

        Retried on timeouts and 5xx because the key makes a repeat return the same
        payment; a key reused for another payment raises ``IdempotencyConflict``.
        """
        if not idempotency_key:
            raise ValueError("a payout needs an idempotency key")
        if not isinstance(amount, Decimal) or not amount.is_finite() or amount <= 0:
            raise ValueError("amount must be a positive Decimal")
        if amount.quantize(_CENT) != amount:
            raise ValueError("amount has more than 2 decimal places")
        if (pix_key is None) == (creditor_account is None):
            raise ValueError("pay either a pix_key or a creditor_account")
        body: dict[str, Any] = {
            "idempotencyKey": idempotency_key,
            "payment": {"currency": "BRL", "amount": f"{amount:.2f}"},
        }
        if pix_key is not None:
            body["pixKey"] = pix_key
        if creditor_account is not None:
            body["creditorAccount"] = dict(creditor_account)
        if description is not None:
            body["description"] = description
        try:
            answer = self._api.request_json("POST", self.paths.payments, body=body, idempotent=True)
        except ProviderError as exc:
            if exc.status == 409:
                raise IdempotencyConflict(str(exc), status=409, problem=exc.problem) from None
            raise
        return payment_with_money(answer)

    # -- Balance and statement ---------------------------------------------------------

    def get_balance(self) -> Decimal:
        """The available balance of the account."""
        body = self._api.get_json(self.paths.balance)
        # Tolerant: the real shape is not public; accept a ``data`` wrapper and variants.
        for holder in (body, body.get("data")):
            if isinstance(holder, Mapping):
                for name in ("available", "availableBalance", "balance"):
                    if holder.get(name) is not None:
                        return money(holder[name], name)
        raise InvalidResponse("balance response has no available amount", status=200)

    def iter_statement(self, start: datetime, end: datetime) -> Iterator[dict[str, Any]]:
        """Statement lines with ``start <= createdAt < end``, ``amount``/``balanceAfter``
        as ``Decimal``."""
        if end < start:
            raise ValueError("end is before start")
        params = {"start": rfc3339(start, "start/end"), "end": rfc3339(end, "start/end")}
        for line in self._walk(self.paths.statement, params):
            yield with_money(line, "amount", "balanceAfter")

    # -- Infractions, invoices, customers ----------------------------------------------

    def iter_infractions(
        self,
        *,
        status: str | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
    ) -> Iterator[dict[str, Any]]:
        params: dict[str, str | int] = {}
        if status is not None:
            params["status"] = status
        if start is not None:
            params["start"] = rfc3339(start, "start/end")
        if end is not None:
            params["end"] = rfc3339(end, "start/end")
        for case in self._walk(self.paths.infractions, params):
            yield with_money(case, "amount", "debitedAmount")

    def get_infraction(self, infraction_id: str) -> dict[str, Any]:
        path = self.paths.infraction.format(id=quote(infraction_id, safe=""))
        found = self._api.get_json(path, endpoint=self.paths.infraction)
        return with_money(found, "amount", "debitedAmount")

    def iter_invoices(self) -> Iterator[dict[str, Any]]:
        for invoice in self._walk(self.paths.invoices, {}):
            yield with_money(invoice, "amount")

    # -- Webhooks ----------------------------------------------------------------------

    def register_webhook(
        self, kind: str, url: str, secret_header_name: str, secret_value: str
    ) -> dict[str, Any]:
        """Register ``url`` for notifications of ``kind`` (TRANSFER, RECEIVE, ...)."""
        path = self.paths.webhook.format(type=quote(kind, safe=""))
        body = {"url": url, "secretHeader": {"name": secret_header_name, "value": secret_value}}
        return self._api.request_json("POST", path, body=body, endpoint=self.paths.webhook)

    def _walk(self, path: str, params: QueryParams) -> Iterator[dict[str, Any]]:
        return walk_pages(self._api.get_json, path, params, self._page_size)
