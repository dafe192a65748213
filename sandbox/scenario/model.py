"""The scenario: one business day in America/Sao_Paulo, as a JSON document.

Top level: the day (``date``), ``seed``, ``opening_balance``, ``reorder``; what the merchant
set up (``charges``, ``recurrences``, ``recurring_charges``), each at a time of day; and the
``events`` of the day. ``docs/scenarios.md`` describes every field.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Annotated, Literal, NamedTuple
from zoneinfo import ZoneInfo

from pydantic import Field, model_validator

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


class Cobv(_Debtor):
    """A due-date charge, an invoice (``PUT /cobv``), due ``due_in_days`` after the day."""

    kind: Literal["cobv"]
    ref: Ref
    amount: Money
    at: TimeOfDay = MIDNIGHT
    txid: ChargeTxid | None = None
    due_in_days: int = Field(default=0, ge=0, le=3650)
    validity_days: int = Field(default=30, ge=0, le=3650)
    note: Note | None = None


Charge = Annotated[Cob | Cobv, Field(discriminator="kind")]


class Recurrence(Strict):
    """A Pix Automático recurrence, created and approved by the payer at ``at``; the
    approval is notified on ``/rec``."""

    ref: Ref
    at: TimeOfDay = MIDNIGHT
    amount: Money | None = None  # None: a variable amount
    contract: Annotated[str, Field(min_length=1, max_length=35)] = "CONTRATO1"
    periodicity: Literal["SEMANAL", "MENSAL", "TRIMESTRAL", "SEMESTRAL", "ANUAL"] = "MENSAL"
    retry_policy: Literal["NAO_PERMITE", "PERMITE_3R_7D"] = "NAO_PERMITE"
    delivery: Delivery | None = None
    note: Note | None = None


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
