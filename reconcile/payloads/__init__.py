"""Typed models of what the provider sends, and how each notification becomes inbox items.

Shared by the receiver (validation, OpenAPI) and the poller. Models tolerate unknown
fields: the raw body is always kept, and the provider adds fields without notice.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, WithJsonSchema

from reconcile.money import parse_amount


def _amount(value: object) -> Decimal:
    amount = parse_amount(value)
    if amount < 0:
        raise ValueError("amount must not be negative")
    return amount


AMOUNT_SCHEMA = {
    "description": 'exact amount: a string such as "110.00" or a JSON number',
    "anyOf": [
        {"type": "string", "pattern": "^[0-9]{1,10}(\\.[0-9]{1,2})?$"},
        {"type": "number", "minimum": 0, "maximum": 9999999999.99, "multipleOf": 0.01},
    ],
}
Amount = Annotated[Decimal, BeforeValidator(_amount), WithJsonSchema(AMOUNT_SCHEMA)]


class Tolerant(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


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
        pointer = prefix + "".join(f"/{part}" for part in error["loc"])
        found.append({"property": pointer or "/", "message": error["msg"]})
    return found


M = TypeVar("M", bound=BaseModel)


def validate_each(
    model: type[M], raw_items: list[tuple[str, Any]], what: str
) -> list[tuple[M, Any]]:
    """Validate every item; collect all violations before failing, so one answer names
    every problem of the delivery."""
    found: list[dict[str, str]] = []
    valid: list[tuple[M, Any]] = []
    for pointer, raw in raw_items:
        if not isinstance(raw, dict):
            found.append({"property": pointer or "/", "message": f"{what} must be a JSON object"})
            continue
        try:
            valid.append((model.model_validate(raw), raw))
        except ValidationError as exc:
            found.extend(violations(exc, pointer))
    if found:
        raise PayloadInvalid(f"the notification does not describe valid {what}", found)
    return valid
