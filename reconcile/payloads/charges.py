"""Charges the merchant created (BCB ``cob``, ``cobv``, ``cobr``) as the API lists them:
what is expected to be paid, against which received Pix are matched."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from pydantic import Field, field_validator

from reconcile.inbox import NewItem
from reconcile.models import ItemKind
from reconcile.payloads import Amount, Tolerant
from reconcile.payloads.items import new_item
from reconcile.payloads.pix import Pagador
from reconcile.payloads.tolerant import read_timestamp
from reconcile.timeutil import next_weekday

CHARGE_KINDS = ("cob", "cobv", "cobr")


class Calendario(Tolerant):
    criacao: str | None = None
    expiracao: int | None = None
    dataDeVencimento: str | None = None
    validadeAposVencimento: int | None = None


# A due-date charge's fine, interest, abatement and discount (BCB ``CobVValor``).
VALUE_TERMS = ("multa", "juros", "abatimento", "desconto")


class Valor(Tolerant):
    original: Amount

    def terms(self) -> dict[str, Any] | None:
        """``multa``, ``juros``, ``abatimento`` and ``desconto`` as received, whatever their
        shape (``None`` when there are none): they are kept, not judged, here."""
        extra = self.model_extra or {}
        found = {name: extra[name] for name in VALUE_TERMS if extra.get(name) is not None}
        return found or None


class Charge(Tolerant):
    txid: str = Field(min_length=1, max_length=35)
    status: str = Field(min_length=1, max_length=40)
    # Bounded: it is part of the key and of the row's rank (a BIGINT).
    revisao: int = Field(default=0, ge=0, le=999_999)
    calendario: Calendario = Field(default_factory=Calendario)
    valor: Valor
    solicitacaoPagador: str | None = Field(default=None, max_length=500)
    devedor: Pagador | None = None

    def created_at(self) -> datetime | None:
        return read_timestamp(self.calendario.criacao)

    def expires_at(self) -> datetime | None:
        created = self.created_at()
        if created is None or self.calendario.expiracao is None:
            return None
        try:
            return created + timedelta(seconds=self.calendario.expiracao)
        except OverflowError:
            return None

    def due_date(self) -> date | None:
        raw = self.calendario.dataDeVencimento
        try:
            return date.fromisoformat(raw) if raw else None
        except ValueError:
            return None

    def payable_until(self) -> date | None:
        """The last day a ``cobv`` can be paid, at any hour of it. The BCB moves a due date
        on a day without banking to the next banking day, and ``validadeAposVencimento``
        counts from the moved date; a last day that falls on such a day moves too (its
        examples: due Tuesday 2020-10-20 with 4 days is paid on Monday the 26th; due
        Saturday 2021-08-28 with 5, on Monday 2021-09-06). Only weekends are known here:
        on a holiday the provider accepts a payment this calls expired."""
        due = self.due_date()
        days = self.calendario.validadeAposVencimento
        if due is None or days is None:
            return None
        try:
            return next_weekday(next_weekday(due) + timedelta(days=days))
        except OverflowError:
            return None


def charge_item(kind: str, raw: dict[str, Any]) -> NewItem:
    if kind not in CHARGE_KINDS:
        raise ValueError(f"not a charge kind: {kind}")
    charge = Charge.model_validate(raw)
    # A revision or a status change is a new fact about the charge.
    return new_item(
        ItemKind.CHARGE,
        f"charge:{kind}:{charge.txid}:{charge.status}:{charge.revisao}",
        {"kind": kind, "data": raw},
        charge.warnings("/data"),
    )


class Invoice(Tolerant):
    """An invoice of the accounts API. It carries no txid, so its payment cannot be
    matched to a Pix: the provider's status is the only word on it."""

    id: str = Field(min_length=1, max_length=100)
    status: str = Field(min_length=1, max_length=40)
    amount: Amount
    dueDate: str | None = None
    createdAt: str | None = None

    @field_validator("id", mode="before")
    @classmethod
    def _text(cls, value: object) -> object:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def invoice_item(raw: dict[str, Any]) -> NewItem:
    invoice = Invoice.model_validate(raw)
    return new_item(
        ItemKind.CHARGE,
        f"charge:invoice:{invoice.id}:{invoice.status}",
        {"kind": "invoice", "data": raw},
        invoice.warnings("/data"),
    )
