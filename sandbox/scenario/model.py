"""The scenario: one business day in America/Sao_Paulo, as a JSON document.

Top level: the day (``date``), ``seed``, ``opening_balance``, ``reorder``, the provider's
``fees``; what the merchant set up (``charges``, ``recurrences``, ``recurring_charges``), each
at a time of day; and the ``events`` of the day. ``docs/scenarios.md`` describes every field.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Annotated, Literal, NamedTuple
from zoneinfo import ZoneInfo

from pydantic import Field, model_validator

from sandbox.charge_payloads import Discount as BcbDiscount
from sandbox.charge_payloads import Term, ValueTerms
from sandbox.charges import amount_due
from sandbox.scenario.events import Event
from sandbox.scenario.fields import (
    Balance,
    ChargeTxid,
    Cnpj,
    Cpf,
    Delivery,
    Money,
    Name,
    Note,
    Ref,
    Strict,
    TimeOfDay,
)

# The business day is a calendar day where the merchant is (docs/design.md §1.8).
BUSINESS_TZ = ZoneInfo("America/Sao_Paulo")
MIDNIGHT = dt.time(0, 0)


class _Debtor(Strict):
    debtor_cpf: Cpf | None = None
    debtor_cnpj: Cnpj | None = None
    debtor_name: Name | None = None

    @model_validator(mode="after")
    def _one_document(self) -> _Debtor:
        if self.debtor_cpf is not None and self.debtor_cnpj is not None:
            raise ValueError("give debtor_cpf or debtor_cnpj, not both")
        return self


class Cob(_Debtor):
    """An immediate charge (``PUT /cob``), payable for ``expires_in`` seconds."""

    kind: Literal["cob"]
    ref: Ref
    amount: Money
    at: TimeOfDay = MIDNIGHT
    txid: ChargeTxid | None = None
    expires_in: int = Field(default=86400, ge=1, le=366 * 86400)
    note: Note | None = None


class Fine(Strict):
    """``valor.multa``, owed once paid after the due date: ``modality`` 1 a value in
    reais, 2 a percentage of the amount."""

    modality: Literal[1, 2]
    value: Money


class Interest(Strict):
    """``valor.juros``, simple interest on the amount for each day late: ``modality`` 1
    reais per calendar day, 2 percent per calendar day, 3 percent a month, 4 percent a
    year; 5 to 8 the same counting business days."""

    modality: Literal[1, 2, 3, 4, 5, 6, 7, 8]
    value: Money


class Abatement(Strict):
    """``valor.abatimento``, taken off whenever paid: ``modality`` 1 a value in reais,
    2 a percentage of the amount."""

    modality: Literal[1, 2]
    value: Money


class DiscountDate(Strict):
    """A discount for paying on or before the scenario's date + ``date_in_days``."""

    date_in_days: int = Field(ge=-3650, le=3650)
    value: Money


class Discount(Strict):
    """``valor.desconto``: ``modality`` 1 (reais) or 2 (percent) until each of ``dates``;
    3 (reais) or 5 (percent) per calendar day paid early, 4 and 6 per business day,
    ``value`` each."""

    modality: Literal[1, 2, 3, 4, 5, 6]
    value: Money | None = None
    dates: tuple[DiscountDate, ...] | None = Field(default=None, min_length=1, max_length=3)

    @model_validator(mode="after")
    def _dates_or_value(self) -> Discount:
        if self.modality in (1, 2):
            if self.dates is None or self.value is not None:
                raise ValueError("modality 1 and 2 take dates, not value")
            if len({d.date_in_days for d in self.dates}) != len(self.dates):
                raise ValueError("two discount dates are the same day")
        elif self.value is None or self.dates is not None:
            raise ValueError("modality 3 to 6 take value, not dates")
        return self


class Cobv(_Debtor):
    """A due-date charge, an invoice (``PUT /cobv``), due ``due_in_days`` after the day
    (before it, when negative), with optional fine, interest, abatement and discount."""

    kind: Literal["cobv"]
    ref: Ref
    amount: Money
    at: TimeOfDay = MIDNIGHT
    txid: ChargeTxid | None = None
    due_in_days: int = Field(default=0, ge=-3650, le=3650)
    validity_days: int = Field(default=30, ge=0, le=3650)
    fine: Fine | None = None
    interest: Interest | None = None
    abatement: Abatement | None = None
    discount: Discount | None = None
    note: Note | None = None

    @model_validator(mode="after")
    def _payable_terms(self) -> Cobv:
        if self.due_in_days + self.validity_days < 0:
            raise ValueError("past due_in_days + validity_days: it can no longer be paid")

        def too_large(value: Decimal, percent: bool) -> bool:
            return value >= (Decimal(100) if percent else self.amount)

        if self.abatement is not None and too_large(
            self.abatement.value, self.abatement.modality == 2
        ):
            raise ValueError("the abatement must be less than the amount (or 100%)")
        discount = self.discount
        if discount is not None:
            percent = discount.modality in (2, 5, 6)
            values: list[Decimal | None] = [d.value for d in discount.dates or ()]
            if any(v is not None and too_large(v, percent) for v in [*values, discount.value]):
                raise ValueError("a discount must be less than the amount (or 100%)")
            if any(d.date_in_days > self.due_in_days for d in discount.dates or ()):
                raise ValueError("a discount date is after the due date")
        return self

    def due_date(self, day: dt.date) -> dt.date:
        return day + dt.timedelta(days=self.due_in_days)

    def value_terms(self, day: dt.date) -> ValueTerms:
        """The fine, interest, abatement and discount as the sandbox keeps them, for a
        scenario played on ``day``."""

        def term(found: Fine | Interest | Abatement | None) -> Term | None:
            return Term(found.modality, found.value) if found is not None else None

        discount = None
        if self.discount is not None:
            dates = tuple(
                (day + dt.timedelta(days=d.date_in_days), d.value)
                for d in self.discount.dates or ()
            )
            discount = BcbDiscount(self.discount.modality, self.discount.value, dates)
        return ValueTerms(term(self.fine), term(self.interest), term(self.abatement), discount)

    def due_on(self, day: dt.date) -> Decimal:
        """What a payer owes when paying on ``day``, the scenario's date."""
        return amount_due(self.amount, self.value_terms(day), self.due_date(day), day).total


Charge = Annotated[Cob | Cobv, Field(discriminator="kind")]
Periodicity = Literal["SEMANAL", "MENSAL", "TRIMESTRAL", "SEMESTRAL", "ANUAL"]


class Recurrence(Strict):
    """A Pix Automático recurrence, created and approved by the payer at ``at``; the
    approval is notified on ``/rec``. Its cycles start ``start_in_days`` after the day
    (``calendario.dataInicial``; before it, when negative)."""

    ref: Ref
    at: TimeOfDay = MIDNIGHT
    amount: Money | None = None  # None: a variable amount
    contract: Annotated[str, Field(min_length=1, max_length=35)] = "CONTRATO1"
    periodicity: Periodicity = "MENSAL"
    retry_policy: Literal["NAO_PERMITE", "PERMITE_3R_7D"] = "NAO_PERMITE"
    start_in_days: int = Field(default=0, ge=-3650, le=3650)
    delivery: Delivery | None = None
    note: Note | None = None

    def start_date(self, day: dt.date) -> dt.date:
        return day + dt.timedelta(days=self.start_in_days)


class RecurringCharge(Strict):
    """A recurring charge (``cobr``) under an approved recurrence; attempts are events."""

    ref: Ref
    recurrence: Ref
    amount: Money
    at: TimeOfDay = MIDNIGHT
    txid: Annotated[str, Field(pattern=r"^[A-Za-z0-9]{1,35}$")] | None = None
    due_in_days: int = Field(default=0, ge=0, le=3650)
    note: Note | None = None


SetUp = Cob | Cobv | Recurrence | RecurringCharge


class Fees(Strict):
    """The provider's fee (tarifa) per Pix received, booked as a DEBIT line of its own
    right after the Pix's credit (``line``) or netted from the credit line (``netted``)."""

    pix_received: Money
    booking: Literal["line", "netted"] = "line"


class Step(NamedTuple):
    """One thing that happens, with where the file says it (``events[3]``)."""

    at: dt.time
    location: str
    item: SetUp | Event


class Scenario(Strict):
    name: Name
    description: Note | None = None
    date: dt.date | None = None  # None: today in America/Sao_Paulo, when it runs
    seed: int = 0
    opening_balance: Balance = Decimal("0.00")
    reorder: bool = False
    fees: Fees | None = None  # None: the provider charges no fee
    charges: tuple[Charge, ...] = ()
    recurrences: tuple[Recurrence, ...] = ()
    recurring_charges: tuple[RecurringCharge, ...] = ()
    events: tuple[Event, ...] = ()

    @model_validator(mode="after")
    def _references(self) -> Scenario:
        # Imported here: the checks walk the timeline this class defines.
        from sandbox.scenario.checks import check_references

        check_references(self)
        return self

    def timeline(self) -> list[Step]:
        """Everything in time order; at equal times set-up first, then file order."""
        ranked: list[tuple[dt.time, int, int, Step]] = []
        sections: list[tuple[str, tuple[SetUp | Event, ...]]] = [
            ("charges", self.charges),
            ("recurrences", self.recurrences),
            ("recurring_charges", self.recurring_charges),
            ("events", self.events),
        ]
        for rank, (section, items) in enumerate(sections):
            for index, item in enumerate(items):
                step = Step(item.at, f"{section}[{index}]", item)
                ranked.append((item.at, rank, index, step))
        ranked.sort(key=lambda entry: entry[:3])
        return [step for *_, step in ranked]

    def business_date(self, today: dt.date | None = None) -> dt.date:
        if self.date is not None:
            return self.date
        return today if today is not None else dt.datetime.now(BUSINESS_TZ).date()


def instant(day: dt.date, at: dt.time) -> dt.datetime:
    """A time of the business day as an aware UTC instant."""
    return dt.datetime.combine(day, at, BUSINESS_TZ).astimezone(dt.UTC)


def day_bounds(day: dt.date) -> tuple[dt.datetime, dt.datetime]:
    """``[start, end)`` of the business day in UTC."""
    start = instant(day, MIDNIGHT)
    end = dt.datetime.combine(day + dt.timedelta(days=1), MIDNIGHT, BUSINESS_TZ)
    return start, end.astimezone(dt.UTC)
