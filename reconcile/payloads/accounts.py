"""Accounts (cash-out) API notifications: ``{"type": T, "data": {...}}``.

TRANSFER, RECEIVE, REFUND, CASHOUT and INFRACTION are understood; any other type (invoice,
crypto, types not yet known) is stored as ``unsupported`` and acknowledged, because the
provider disables a webhook that keeps failing.
"""

from __future__ import annotations

import hashlib
from typing import Any, Self

from pydantic import Field, ValidationError, field_validator, model_validator

from reconcile.inbox import NewItem, dump_json
from reconcile.models import ItemKind, ItemStatus
from reconcile.payloads import Amount, PayloadInvalid, Tolerant, violations

KNOWN_TYPES = {
    "TRANSFER": ItemKind.ACCOUNTS_TRANSFER,
    "RECEIVE": ItemKind.ACCOUNTS_RECEIVE,
    "REFUND": ItemKind.ACCOUNTS_REFUND,
    "CASHOUT": ItemKind.ACCOUNTS_CASHOUT,
    "INFRACTION": ItemKind.ACCOUNTS_INFRACTION,
}


def _as_text(value: object) -> object:
    # Providers send numeric ids as JSON numbers or strings; keys must not depend on which.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


class Payment(Tolerant):
    currency: str | None = None
    amount: Amount | None = None


class Account(Tolerant):
    ispb: str | None = None
    issuer: str | None = None
    number: str | None = None
    accountType: str | None = None
    document: str | None = None
    name: str | None = None


class RefundInfo(Tolerant):
    endToEndId: str | None = None
    status: str | None = None
    errorCode: str | None = None
    pixRefundAmount: Amount | None = None


class Identified(Tolerant):
    id: str | None = Field(default=None, max_length=100)
    idempotencyKey: str | None = Field(default=None, max_length=100)
    endToEndId: str | None = Field(default=None, max_length=64)
    status: str = Field(min_length=1, max_length=32)

    @field_validator("id", "idempotencyKey", "endToEndId", mode="before")
    @classmethod
    def _ids_as_text(cls, value: object) -> object:
        return _as_text(value)

    def reference(self) -> str | None:
        return self.id or self.idempotencyKey or self.endToEndId


class MovementData(Identified):
    """TRANSFER, RECEIVE and REFUND: a Pix movement on the account."""

    pixKey: str | None = None
    txId: str | None = None
    errorCode: str | None = None
    creditDebitType: str | None = None
    localInstrument: str | None = None
    createdAt: str | None = None
    creditorAccount: Account | None = None
    debtorAccount: Account | None = None
    payment: Payment | None = None
    refunds: list[RefundInfo] = Field(default_factory=list)

    @model_validator(mode="after")
    def _identified(self) -> Self:
        if self.reference() is None:
            raise ValueError("one of id, idempotencyKey or endToEndId is required")
        return self


class CashoutData(Identified):
    """A pre-settlement failure of a cash-out; often only status and keys."""

    message: str | None = None
    createdAt: str | None = None

    @model_validator(mode="after")
    def _identified(self) -> Self:
        if (self.idempotencyKey or self.endToEndId or self.id) is None:
            raise ValueError("one of idempotencyKey or endToEndId is required")
        return self


class InfractionData(Identified):
    """A MED infraction: no endToEndId, the infraction must be fetched for it."""

    @model_validator(mode="after")
    def _identified(self) -> Self:
        if self.id is None:
            raise ValueError("the infraction id is required")
        return self


DATA_MODELS: dict[str, type[Identified]] = {
    "TRANSFER": MovementData,
    "RECEIVE": MovementData,
    "REFUND": MovementData,
    "CASHOUT": CashoutData,
    "INFRACTION": InfractionData,
}


class AccountsNotification(Tolerant):
    """The envelope. Any non-empty ``type`` is accepted: unknown ones are stored as
    unsupported rather than refused."""

    type: str = Field(min_length=1, max_length=40)
    data: dict[str, Any]


class AccountsNotificationForKind(Tolerant):
    """At ``/webhooks/accounts/{kind}`` the type may come from the path instead."""

    type: str | None = Field(default=None, min_length=1, max_length=40)
    data: dict[str, Any]


def _fingerprint(raw: Any) -> str:
    return hashlib.sha256(dump_json(raw).encode()).hexdigest()[:32]


def _item(pointer: str, raw: Any, path_type: str | None) -> NewItem:
    if not isinstance(raw, dict):
        raise PayloadInvalid(
            "a notification must be a JSON object",
            [{"property": pointer or "/", "message": "must be a JSON object"}],
        )
    envelope = AccountsNotificationForKind if path_type else AccountsNotification
    try:
        parsed = envelope.model_validate(raw)
    except ValidationError as exc:
        raise PayloadInvalid("not an accounts notification", violations(exc, pointer)) from None
    kind_name = (parsed.type or path_type or "").upper()
    if kind_name not in KNOWN_TYPES:
        # Kept whole and shown; identical repeats still dedupe on the fingerprint.
        return NewItem(
            kind=ItemKind.UNSUPPORTED.value,
            key=f"unsupported:{kind_name or 'UNKNOWN'}:{_fingerprint(raw)}",
            payload=dump_json(raw),
            status=ItemStatus.UNSUPPORTED.value,
        )
    model = DATA_MODELS[kind_name]
    try:
        data = model.model_validate(raw["data"])
    except ValidationError as exc:
        raise PayloadInvalid(
            f"the {kind_name} notification is not valid", violations(exc, pointer + "/data")
        ) from None
    key = f"accounts:{kind_name}:{data.reference()}:{data.status}"
    if isinstance(data, MovementData) and data.refunds:
        # A second partial refund keeps the status; the refund count makes it a new fact.
        key += f":r{len(data.refunds)}"
    return NewItem(kind=KNOWN_TYPES[kind_name].value, key=key, payload=dump_json(raw))


def accounts_items(document: Any, path_type: str | None = None) -> list[NewItem]:
    """``{type, data}``; ``path_type`` comes from ``/webhooks/accounts/{kind}`` for bodies
    that omit ``type``."""
    if not isinstance(document, dict):
        raise PayloadInvalid(
            'body must be {"type": ..., "data": {...}}',
            [{"property": "/", "message": "must be a JSON object"}],
        )
    return [_item("", document, path_type)]
