"""What the day book writes down for later: notifications to send, API faults to arm,
charges whose payments it follows."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

from sandbox.scenario import events as ev
from sandbox.scenario.fields import Delivery
from sandbox.scenario.identity import item_keys
from sandbox.scenario.outcome import Channel


@dataclass
class PlannedNotification:
    id: str
    channel: Channel
    payload: dict[str, Any]
    at: datetime
    source: str
    delivery: Delivery | None
    forged: bool = False

    @property
    def keys(self) -> tuple[str, ...]:
        return item_keys(self.channel, self.payload)


@dataclass(frozen=True)
class PlannedApiFault:
    source: str
    at: datetime
    fault: ev.ApiFault


@dataclass
class ChargeDraft:
    ref: str
    kind: Literal["cob", "cobv", "cobr"]
    txid: str
    amount: Decimal
    expires_at: datetime | None = None  # the first instant a cob or cobv can no longer be paid
    payments: list[str] = field(default_factory=list)
    due: Decimal | None = None  # cobv: what was due when first paid (its terms applied)
