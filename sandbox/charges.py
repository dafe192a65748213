"""Charges the merchant created: immediate (``cob``) and due-date (``cobv``) ones.

Paying a charge books a Pix with its txid in the ``PixLedger``, so ``GET /pix`` and
``GET /cob/{txid}`` always agree. The status is the BCB *registration* status, computed
from the sandbox clock when read.
"""

from __future__ import annotations

import copy
import random
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Any, Final, Literal
from zoneinfo import ZoneInfo

from sandbox.charge_payloads import ChargeTerms, ValueTerms
from sandbox.clock import Clock, format_rfc3339, to_millis
from sandbox.defaults import DEFAULT_PAYER_NAME
from sandbox.ledger import PixLedger, format_amount
from sandbox.listing import ListRequest

ChargeKind = Literal["cob", "cobv"]

ACTIVE: Final = "ATIVA"
CONCLUDED: Final = "CONCLUIDA"
REMOVED_BY_MERCHANT: Final = "REMOVIDA_PELO_USUARIO_RECEBEDOR"
REMOVED_BY_PSP: Final = "REMOVIDA_PELO_PSP"
# Due dates are calendar days of the payer, who is in Brazil.
BUSINESS_TZ: Final = ZoneInfo("America/Sao_Paulo")


class ChargeNotPayable(ValueError):
    """The charge is removed or expired: a payer's PSP would refuse to pay it."""


# -- What a due-date charge costs on the day it is paid ------------------------------------

_CENT: Final = Decimal("0.01")
# Rates per month and per year: a commercial month of 30 and year of 360 calendar days, or
# 21 and 252 business days (Brazil's convention for business-day rates).
_MONTH_DAYS: Final = 30
_YEAR_DAYS: Final = 360
_MONTH_BUSINESS_DAYS: Final = 21
_YEAR_BUSINESS_DAYS: Final = 252


@dataclass(frozen=True, slots=True)
class AmountDue:
    """What a charge costs on one day, in the parts of a Pix's ``componentesValor``."""

    original: Decimal
    multa: Decimal = Decimal(0)
    juros: Decimal = Decimal(0)
    abatimento: Decimal = Decimal(0)
    desconto: Decimal = Decimal(0)

    @property
    def total(self) -> Decimal:
        return self.original + self.multa + self.juros - self.abatimento - self.desconto

    def components(self) -> dict[str, Decimal]:
        """``original`` and every part that is not zero."""
        parts = {"original": self.original}
        for name in ("multa", "juros", "abatimento", "desconto"):
            value: Decimal = getattr(self, name)
            if value:
                parts[name] = value
        return parts


def _business_day(day: date) -> bool:
    return day.weekday() < 5  # Monday to Friday: the sandbox has no holiday calendar


def _postponed(day: date) -> date:
    """A date that falls on a weekend moves to the next business day."""
    while not _business_day(day):
        day += timedelta(days=1)
    return day


def last_payable_day(due_date: date, validity_days: int) -> date:
    """The last day a ``cobv`` can be paid: the due date moved off a weekend, plus
    ``validadeAposVencimento``, moved off a weekend again (the BCB's examples: due Tuesday
    2020-10-20 with 4 days, paid on Monday the 26th; due Saturday 2021-08-28 with 5, on
    Monday 2021-09-06). Holidays would move both dates too; with no holiday calendar, the
    sandbox refuses a payment that a holiday would have let through."""
    return _postponed(_postponed(due_date) + timedelta(days=validity_days))


def _days(after: date, through: date, *, business: bool) -> int:
    """Days ``d`` with ``after < d <= through`` (only business days, if asked)."""
    count = 0
    day = after
    while day < through:
        day += timedelta(days=1)
        count += 1 if not business or _business_day(day) else 0
    return count


def _rounded(amount: Decimal) -> Decimal:
    return amount.quantize(_CENT, rounding=ROUND_HALF_UP)


def amount_due(original: Decimal, terms: ValueTerms, due_date: date, paid_on: date) -> AmountDue:
    """What a payer's PSP charges on ``paid_on`` for a ``cobv`` (BCB ``CobVValor``).

    The due date (and each fixed discount date) on a weekend moves to the next business
    day, and everything counts from the moved date. Paid after it: the fine (``multa``:
    1 a value, 2 a percentage) and simple interest (``juros``: 1 a value per calendar day,
    2 a percentage per calendar day, 3 per month of 30 days, 4 per year of 360 days; 5-8
    the same per business day, month of 21 and year of 252 business days), counting the
    days after the due date through the payment date. Always: the abatement
    (``abatimento``: 1 a value, 2 a percentage). Paid on or before a date of
    ``descontoDataFixa``: that date's discount (1 a value, 2 a percentage; the nearest
    such date, the largest discount if two share it); paid before the due date: 3 a value
    and 5 a percentage per calendar day early, 4 and 6 per business day (days after the
    payment date through the due date). Percentages are of the original; each part is
    rounded once to the centavo, half up; the total never goes below zero (the discount
    gives way first, then the abatement).
    """
    due = _postponed(due_date)
    fine = interest = abatement = discount = Decimal(0)
    with localcontext() as context:
        context.prec = 60  # exact products, correctly rounded quotients

        def share(percent: Decimal) -> Decimal:
            return original * percent / 100

        if paid_on > due and terms.fine is not None:
            rate = terms.fine
            fine = _rounded(rate.value if rate.modality == 1 else share(rate.value))
        if paid_on > due and terms.interest is not None:
            rate = terms.interest
            business = rate.modality > 4
            late = _days(due, paid_on, business=business)
            kind = rate.modality - 4 if business else rate.modality
            if kind == 1:
                interest = rate.value * late
            else:
                period = {2: 1, 3: _MONTH_DAYS, 4: _YEAR_DAYS}[kind]
                if business:
                    period = {2: 1, 3: _MONTH_BUSINESS_DAYS, 4: _YEAR_BUSINESS_DAYS}[kind]
                interest = share(rate.value) * late / period
            interest = _rounded(interest)
        if terms.abatement is not None:
            rate = terms.abatement
            abatement = _rounded(rate.value if rate.modality == 1 else share(rate.value))
        offer = terms.discount
        if offer is not None and offer.value is None:
            # Nearest date first; at equal dates, the largest discount first.
            for until, minus_value in sorted((_postponed(d), -v) for d, v in offer.dates):
                if paid_on <= until:
                    value = -minus_value
                    discount = _rounded(value if offer.modality == 1 else share(value))
                    break
        elif offer is not None and offer.value is not None:
            early = _days(paid_on, due, business=offer.modality in (4, 6))
            per_day = offer.value if offer.modality in (3, 4) else share(offer.value)
            discount = _rounded(per_day * early)
    short = -(original + fine + interest - abatement - discount)
    if short > 0:
        cut = min(discount, short)
        discount, short = discount - cut, short - cut
        abatement -= min(abatement, short)
    return AmountDue(original, fine, interest, abatement, discount)


@dataclass(slots=True)
class _Charge:
    kind: ChargeKind
    txid: str
    created: datetime
    terms: ChargeTerms
    location: str
    expires_at: datetime  # the first instant at which it can no longer be paid
    removed: str | None = None
    concluded: bool = False
    e2eids: list[str] = field(default_factory=list)

    @property
    def sort_key(self) -> tuple[datetime, str]:
        return (self.created, self.txid)


def _due(charge: _Charge, paid_on: date) -> AmountDue:
    terms = charge.terms
    if charge.kind != "cobv" or terms.due_date is None:
        return AmountDue(terms.amount)
    return amount_due(terms.amount, terms.value_terms, terms.due_date, paid_on)


def _expiry(kind: ChargeKind, created: datetime, terms: ChargeTerms) -> datetime:
    if kind == "cob":
        return created + timedelta(seconds=terms.expiracao)
    if terms.due_date is None:
        raise ValueError("a due-date charge needs a due date")
    # Payable until the end of the last valid day, "em qualquer horário do dia".
    last_day = last_payable_day(terms.due_date, terms.validity_days)
    return datetime.combine(last_day + timedelta(days=1), time(), BUSINESS_TZ)


class ChargeBook:
    """``cob`` and ``cobv`` by txid (one namespace: a Pix's txid names one charge).

    ``expired_status`` is what an expired, unpaid charge reports. The spec says the
    registration status ignores expiry, so the default keeps it ``ATIVA`` (clients read
    the expiry from ``calendario``); set ``REMOVIDA_PELO_PSP`` to mimic PSPs that remove
    expired charges.
    """

    def __init__(
        self,
        *,
        ledger: PixLedger,
        rng: random.Random,
        clock: Clock,
        location_host: str,
        merchant: Mapping[str, str],
    ) -> None:
        self._lock = threading.Lock()
        self._ledger = ledger
        self._rng = rng
        self._clock = clock
        self._location_host = location_host
        self._merchant = dict(merchant)
        self._by_txid: dict[str, _Charge] = {}
        self.expired_status: str = ACTIVE

    def create(self, kind: ChargeKind, txid: str, terms: ChargeTerms) -> dict[str, Any]:
        """Register a charge; ``ValueError`` when the txid is already used."""
        with self._lock:
            if txid in self._by_txid:
                raise ValueError(f"txid {txid} is already used by a charge")
            created = to_millis(self._clock())
            location = f"{self._location_host}/qr/v2/{self._rng.getrandbits(128):032x}"
            charge = _Charge(kind, txid, created, terms, location, _expiry(kind, created, terms))
            self._by_txid[txid] = charge
            return self._render(charge, created)

    def kind_of(self, txid: str) -> ChargeKind | None:
        with self._lock:
            charge = self._by_txid.get(txid)
            return charge.kind if charge is not None else None

    def get(self, kind: ChargeKind, txid: str) -> dict[str, Any] | None:
        with self._lock:
            charge = self._by_txid.get(txid)
            if charge is None or charge.kind != kind:
                return None
            return self._render(charge, self._clock())

    def expires_at(self, txid: str) -> datetime:
        """The first instant the charge can no longer be paid."""
        with self._lock:
            return self._by_txid[txid].expires_at

    def is_expired(self, txid: str) -> bool:
        with self._lock:
            return self._clock() >= self._by_txid[txid].expires_at

    def due_on(self, txid: str, paid_on: date) -> AmountDue:
        """What paying the charge on ``paid_on`` (a São Paulo date) costs: a ``cobv``'s
        terms applied, a ``cob``'s original."""
        with self._lock:
            return _due(self._by_txid[txid], paid_on)

    def query(self, kind: ChargeKind, request: ListRequest) -> list[dict[str, Any]]:
        """Charges created within the window that match the filters, oldest first."""
        now = self._clock()
        wanted = request.filters
        with self._lock:
            charges = sorted(
                (c for c in self._by_txid.values() if c.kind == kind and request.covers(c.created)),
                key=lambda c: c.sort_key,
            )
            rendered = [self._render(c, now) for c in charges]
        devedor_keys = ("cpf", "cnpj")
        return [
            body
            for body in rendered
            if all(body.get("devedor", {}).get(k) == wanted[k] for k in devedor_keys if k in wanted)
            and ("status" not in wanted or body["status"] == wanted["status"])
        ]

    def pay(
        self,
        txid: str,
        amount: Decimal | None,
        *,
        payer_cpf: str | None,
        payer_cnpj: str | None,
        payer_name: str | None,
        horario: datetime | None,
    ) -> dict[str, Any]:
        """Book a Pix for the charge and conclude it; see ``SandboxProvider.pay_charge``.

        ``amount`` None pays what is due on the payment date (São Paulo): a ``cobv``'s
        fine, interest, abatement and discount applied, itemised in ``componentesValor``.
        """
        at = to_millis(horario if horario is not None else self._clock())
        with self._lock:
            charge = self._by_txid.get(txid)
            if charge is None:
                raise KeyError(f"no charge with txid {txid}")
            if charge.removed is not None:
                raise ChargeNotPayable(f"charge {txid} is {charge.removed}")
            if at >= charge.expires_at:
                raise ChargeNotPayable(f"charge {txid} expired at {charge.expires_at}")
            devedor = charge.terms.devedor or {}
            if payer_cpf is None and payer_cnpj is None:
                payer_cpf, payer_cnpj = devedor.get("cpf"), devedor.get("cnpj")
            due = _due(charge, at.astimezone(BUSINESS_TZ).date())
            if amount is None and due.total <= 0:
                raise ChargeNotPayable(f"nothing is due on charge {txid} on that day")
            paid = amount if amount is not None else due.total
            pix = self._ledger.receive(
                paid,
                # The breakdown of what was due; a PSP that let another amount through has
                # none to give, and reports the whole Pix as ``original``.
                components=due.components() if paid == due.total else None,
                txid=txid,
                payer_cpf=payer_cpf,
                payer_cnpj=payer_cnpj,
                payer_name=payer_name or devedor.get("nome") or DEFAULT_PAYER_NAME,
                horario=at,
                chave=charge.terms.chave,
            )
            charge.e2eids.append(pix["endToEndId"])
            charge.concluded = True
            return pix

    def remove(self, txid: str, *, by_psp: bool = False) -> dict[str, Any]:
        """Remove an unpaid charge, as ``PATCH`` with a ``REMOVIDA_…`` status does."""
        with self._lock:
            charge = self._by_txid[txid]
            if charge.concluded or charge.removed is not None:
                raise ValueError(f"charge {txid} is no longer ATIVA")
            charge.removed = REMOVED_BY_PSP if by_psp else REMOVED_BY_MERCHANT
            return self._render(charge, self._clock())

    def _status(self, charge: _Charge, now: datetime) -> str:
        if charge.removed is not None:
            return charge.removed
        if charge.concluded:
            return CONCLUDED
        return self.expired_status if now >= charge.expires_at else ACTIVE

    def _render(self, charge: _Charge, now: datetime) -> dict[str, Any]:
        terms = charge.terms
        calendario: dict[str, Any] = {"criacao": format_rfc3339(charge.created)}
        if charge.kind == "cob":
            calendario["expiracao"] = terms.expiracao
        else:
            calendario["dataDeVencimento"] = str(terms.due_date)
            calendario["validadeAposVencimento"] = terms.validity_days
        body: dict[str, Any] = {
            "calendario": calendario,
            "txid": charge.txid,
            "revisao": 0,
            "location": charge.location,
            "status": self._status(charge, now),
        }
        if terms.devedor is not None:
            body["devedor"] = dict(terms.devedor)
        if charge.kind == "cobv":
            body["recebedor"] = dict(self._merchant)
        body["valor"] = {"original": format_amount(terms.amount), **terms.value_terms.render()}
        body["chave"] = terms.chave
        if terms.solicitacao_pagador is not None:
            body["solicitacaoPagador"] = terms.solicitacao_pagador
        if terms.info_adicionais is not None:
            body["infoAdicionais"] = copy.deepcopy(terms.info_adicionais)
        pix = [self._ledger.get(e2eid) for e2eid in charge.e2eids]
        if pix:
            body["pix"] = [p for p in pix if p is not None]
        return body
