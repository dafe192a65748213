"""Exact money: ``Decimal`` in Python, integer centavos in the database, never float."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

CENT = Decimal("0.01")
# As in the BCB spec ("\\d{1,10}\\.\\d{2}"), but tolerant of fewer decimals and a sign;
# exponents, spaces and thousands separators are refused, never guessed at.
AMOUNT_TEXT = re.compile(r"^-?[0-9]+(\.[0-9]{1,2})?$")
# The BCB caps amounts at ten integer digits; anything larger is junk (or an attack on
# Decimal arithmetic), and it would not fit a BIGINT of centavos either.
MAX_AMOUNT = Decimal("9999999999.99")


class InvalidAmount(ValueError):
    pass


def parse_amount(value: object) -> Decimal:
    """Accept ``"110.00"``, ``110.0`` parsed as Decimal, or an int; reject floats and junk.

    Floats are refused because by the time a float exists the exact value may already be
    lost; the receiver parses JSON numbers straight into ``Decimal``.
    """
    if isinstance(value, bool | float):
        raise InvalidAmount(
            f"amount must be a decimal string or number, got {type(value).__name__}"
        )
    if isinstance(value, int):
        amount = Decimal(value)
    elif isinstance(value, Decimal):
        amount = value
    elif isinstance(value, str):
        if not AMOUNT_TEXT.match(value):
            raise InvalidAmount('not a decimal amount such as "110.00"')
        try:
            amount = Decimal(value)
        except InvalidOperation:
            raise InvalidAmount('not a decimal amount such as "110.00"') from None
    else:
        raise InvalidAmount(
            f"amount must be a decimal string or number, got {type(value).__name__}"
        )
    if not amount.is_finite() or abs(amount) > MAX_AMOUNT:
        raise InvalidAmount(f"amount out of range (at most {MAX_AMOUNT})")
    if amount.quantize(CENT) != amount:
        raise InvalidAmount(f"amount has more than 2 decimal places: {value!r}")
    return amount


def to_cents(amount: Decimal) -> int:
    return int(amount.quantize(CENT) * 100)


def from_cents(cents: int) -> Decimal:
    return (Decimal(cents) / 100).quantize(CENT)
