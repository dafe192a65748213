"""Field types of the scenario format: exact money, times of day, references, faults.

Every model forbids unknown keys: a misspelt key in a hand-written day would otherwise be
ignored silently and the day would test something else than its author meant.
"""

from __future__ import annotations

import re
from datetime import time
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints

_CENT: Final = Decimal("0.01")
_MAX_AMOUNT: Final = Decimal("9999999999.99")  # the BCB spec's \d{1,10}\.\d{2}
_TIME_RE: Final = re.compile(r"\d{2}:\d{2}(:\d{2})?")


def to_cents(amount: Decimal | str | int) -> int:
    """Exact centavos of an amount in reais (``Decimal("150.10")`` → ``15010``)."""
    value = Decimal(amount) * 100
    if value != value.to_integral_value():
        raise ValueError(f"{amount!r} has fractions of a centavo")
    return int(value)


def from_cents(value: int) -> Decimal:
    return Decimal(value).scaleb(-2)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _decimal(value: Any) -> Decimal:
    # JSON numbers reach here as Decimal (the loader parses them so); a float would
    # already have lost the exact value, so it is refused rather than guessed back.
    if isinstance(value, bool) or not isinstance(value, str | int | Decimal):
        raise ValueError('an amount is a string such as "150.00" (or an exact JSON number)')
    try:
        amount = Decimal(value)
    except InvalidOperation:
        raise ValueError(f'{value!r} is not an amount; write it like "150.00"') from None
    if not amount.is_finite() or amount.quantize(_CENT) != amount:
        raise ValueError(f"{value!r} is not an amount in reais with at most 2 decimal places")
    if amount > _MAX_AMOUNT:
        raise ValueError(f"{value!r} is above the largest Pix amount, {_MAX_AMOUNT}")
    return amount.quantize(_CENT)


def _positive(value: Any) -> Decimal:
    amount = _decimal(value)
    if amount <= 0:
        raise ValueError(f"{value!r} is not a positive amount")
    return amount


def _not_negative(value: Any) -> Decimal:
    amount = _decimal(value)
    if amount < 0:
        raise ValueError(f"{value!r} is negative")
    return amount


def _time_of_day(value: Any) -> time:
    if isinstance(value, time):
        return value
    if not isinstance(value, str) or not _TIME_RE.fullmatch(value):
        raise ValueError(f"a time of day is HH:MM or HH:MM:SS (America/Sao_Paulo), got {value!r}")
    try:
        return time.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a time of day (00:00 to 23:59:59)") from None


Money = Annotated[Decimal, BeforeValidator(_positive)]
Balance = Annotated[Decimal, BeforeValidator(_not_negative)]
TimeOfDay = Annotated[time, BeforeValidator(_time_of_day)]
# Refs name things inside the scenario; a payout's ref is also its idempotency key, which
# travels in a URL path, hence the provider's alphabet.
Ref = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._:\-]{1,64}$")]
Txid = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9]{1,35}$")]
ChargeTxid = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9]{26,35}$")]
Cpf = Annotated[str, StringConstraints(pattern=r"^\d{11}$")]
Cnpj = Annotated[str, StringConstraints(pattern=r"^[0-9A-Z]{14}$")]
Name = Annotated[str, StringConstraints(min_length=1, max_length=140)]
Note = Annotated[str, StringConstraints(max_length=500)]
# SPI rejection codes (AB03, AC03, AM02, ...): four capitals or digits.
SpiCode = Annotated[str, StringConstraints(pattern=r"^[A-Z0-9]{4}$")]


# -- Delivery faults of one notification -----------------------------------------------


class Drop(Strict):
    """Never sent: the receiver can learn of it only by polling the API."""

    fault: Literal["drop"]


class Duplicate(Strict):
    """Sent ``copies`` times; repeats go out after every first copy of the day."""

    fault: Literal["duplicate"]
    copies: int = Field(default=2, ge=2, le=20)


class Delay(Strict):
    """Sent after everything else, or ``seconds`` (wall clock) after its turn."""

    fault: Literal["delay"]
    seconds: float | None = Field(default=None, gt=0, le=60)


Delivery = Annotated[Drop | Duplicate | Delay, Field(discriminator="fault")]
ApiFamily = Literal["qrcode", "accounts"]
