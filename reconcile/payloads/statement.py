"""What the accounts API reports about the account itself: statement lines and balances.

They reach the inbox only by polling (``source=poll``), one item per line or snapshot."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from functools import partial
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator

from reconcile.inbox import NewItem, dump_json
from reconcile.models import ItemKind
from reconcile.money import MAX_BALANCE
from reconcile.payloads import Amount, Tolerant, read_amount
from reconcile.payloads.items import new_item

# A running balance may be negative (an infraction debit on an empty account), and larger
# than any one amount.
SignedAmount = Annotated[
    Decimal, BeforeValidator(partial(read_amount, signed=True, maximum=MAX_BALANCE))
]


def _optional_amount(value: object) -> Decimal | None:
    """An extra the line may carry; unreadable or negative reads as absent, not an error."""
    try:
        return read_amount(value)
    except ValueError:
        return None


# A fee the provider netted from the line (``amount`` is then what reached the account).
OptionalAmount = Annotated[Decimal | None, BeforeValidator(_optional_amount)]


class StatementLine(Tolerant):
    id: str = Field(min_length=1, max_length=100)
    type: str = Field(min_length=1, max_length=16)
    category: str | None = None
    amount: Amount
    balanceAfter: SignedAmount | None = None
    endToEndId: str | None = None
    originalEndToEndId: str | None = None
    idempotencyKey: str | None = None
    txId: str | None = None
    infractionId: str | None = None
    createdAt: str | None = None
    feeAmount: OptionalAmount = None

    @field_validator("id", "infractionId", mode="before")
    @classmethod
    def _text(cls, value: object) -> object:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class BalanceReading(Tolerant):
    available: SignedAmount
    takenAt: str


def statement_item(line: dict[str, Any]) -> NewItem:
    parsed = StatementLine.model_validate(line)
    return new_item(ItemKind.ACCOUNTS_STATEMENT, f"statement:{parsed.id}", line, parsed.warnings())


def balance_item(available: Decimal, taken_at: datetime) -> NewItem:
    stamp = taken_at.isoformat()
    return NewItem(
        kind=ItemKind.ACCOUNTS_BALANCE.value,
        key=f"balance:{stamp}",
        payload=dump_json({"available": available, "takenAt": stamp}),
        refs=(),
    )
