"""Exact money: ``Decimal`` in Python, integer centavos in the database, never float."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

CENT = Decimal("0.01")
# JSON's number grammar (leading zeros tolerated): serializers differ in how they write the
# same amount — Java's BigDecimal sends ``1.5E+2``, others ``110.000`` — and any notation of
# a whole number of centavos is that amount, exactly. Spaces, thousands separators and
# decimal commas are refused, never guessed at.
AMOUNT_TEXT = re.compile(r"^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$")
# No notation of an amount anybody means is longer; longer text is not worth parsing.
LONGEST_AMOUNT_TEXT = 64
# The BCB caps amounts at ten integer digits; anything larger is junk (or an attack on
# Decimal arithmetic), and it would not fit a BIGINT of centavos either.
MAX_AMOUNT = Decimal("9999999999.99")
# An account's balance is a sum of such amounts and may pass that: bounded only by what a
# BIGINT of centavos holds (about 9.2e16 reais).
MAX_BALANCE = Decimal("9999999999999999.99")


class InvalidAmount(ValueError):
    pass


def parse_amount(value: object, maximum: Decimal = MAX_AMOUNT) -> Decimal:
    """An amount to the centavo: ``"110.00"``, a ``Decimal`` or an int, in any notation of
    a whole number of centavos (``"1.5E+2"``, ``"110.000"``); floats and junk are refused.

    Floats are refused because by the time a float exists the exact value may already be
    lost; the receiver parses JSON numbers straight into ``Decimal``. Every reader of an
    amount — the receiver, the workers, the confirmation's look-ups, the matchers — comes
    here, so none can read an amount another refuses.
    """
    if isinstance(value, bool) or not isinstance(value, int | Decimal | str):
        raise InvalidAmount(
            f"amount must be a decimal string or number, got {type(value).__name__}"
        )
    if isinstance(value, str) and (
        len(value) > LONGEST_AMOUNT_TEXT or not AMOUNT_TEXT.match(value)
    ):
        raise InvalidAmount('not a decimal amount such as "110.00"')
    try:
        amount = Decimal(value)
        if not amount.is_finite() or abs(amount) > maximum:
            raise InvalidAmount(f"amount out of range (at most {maximum})")
        cents = amount.quantize(CENT)
    except (InvalidOperation, OverflowError):
        raise InvalidAmount(f"amount out of range (at most {maximum})") from None
    if cents != amount:
        raise InvalidAmount(f"amount is not a whole number of centavos: {value!r}")
    return cents


def to_cents(amount: Decimal) -> int:
    return int(amount.quantize(CENT) * 100)


def from_cents(cents: int) -> Decimal:
    return (Decimal(cents) / 100).quantize(CENT)
