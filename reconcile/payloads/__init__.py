"""Typed models of what the provider sends, and how each notification becomes inbox items.

Shared by the receiver (validation, OpenAPI) and the poller. Models are tolerant readers
(``tolerant.py``): unknown fields are kept, fields that do not parse are flagged rather than
fatal, and the raw body is always kept; only a missing business key refuses an item.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated

from pydantic import BeforeValidator, ValidationError, WithJsonSchema

from reconcile.money import MAX_AMOUNT, InvalidAmount, parse_amount
from reconcile.payloads.tolerant import (
    Expect,
    ItemWarning,
    Tolerant,
    one_of,
    pointer,
    timestamp,
)

AMOUNT_EXPECTED = (
    'an amount: a number or numeric string such as "110.00", a whole number of centavos'
)
UNKNOWN_STATUS = "UNKNOWN"
"""Stands for a status that is absent or unreadable, in keys and in domain tables."""


def read_amount(value: object, *, signed: bool = False, maximum: Decimal = MAX_AMOUNT) -> Decimal:
    """An amount, to the centavo, whichever way its number is written; ``ValueError`` when
    its value is not a whole number of centavos within the BCB's range.

    The receiver reads the parsed body, the worker the stored payload, where the same
    number may have become text: both come here (and so to ``parse_amount``, the one rule
    for every amount), so the two can never disagree about an amount."""
    try:
        amount = parse_amount(value, maximum)
    except InvalidAmount:
        raise ValueError(AMOUNT_EXPECTED) from None
    if amount < 0 and not signed:
        raise ValueError(AMOUNT_EXPECTED)
    return amount


AMOUNT_SCHEMA = {
    "description": (
        'exact amount: a string such as "110.00" or a JSON number; any notation of a whole'
        " number of centavos (1.5E+2, 110.000) is read too"
    ),
    "anyOf": [
        {"type": "string", "pattern": "^[0-9]{1,10}(\\.[0-9]{1,2})?$"},
        {"type": "number", "minimum": 0, "maximum": 9999999999.99, "multipleOf": 0.01},
    ],
}
Amount = Annotated[Decimal, BeforeValidator(read_amount), WithJsonSchema(AMOUNT_SCHEMA)]
AMOUNT = Expect(AMOUNT_EXPECTED, required=True)
"""An amount the provider always sends: absent or unreadable, it is flagged."""


class PayloadInvalid(ValueError):
    """A notification that cannot be taken as it is; ``violations`` say where and why."""

    def __init__(self, detail: str, violations: list[dict[str, str]] | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.violations = violations


def violations(exc: ValidationError, prefix: str = "") -> list[dict[str, str]]:
    """Each problem as a JSON pointer and a message — never the offending value, which may
    be personal data."""
    found = []
    for error in exc.errors(include_url=False, include_input=False):
        where = prefix + "".join(f"/{part}" for part in error["loc"])
        found.append({"property": where or "/", "message": error["msg"]})
    return found


__all__ = [
    "AMOUNT",
    "AMOUNT_EXPECTED",
    "UNKNOWN_STATUS",
    "Amount",
    "Expect",
    "ItemWarning",
    "PayloadInvalid",
    "Tolerant",
    "one_of",
    "pointer",
    "read_amount",
    "timestamp",
    "violations",
]
