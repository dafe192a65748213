"""Deliver Pix notifications to a merchant's webhook, with scripted losses and repeats.

Delivery is BCB style: ``POST {webhookUrl}/pix`` with ``{"pix": [...]}``. Real providers
deliver at least once, drop some notifications for good and repeat others; a fault plan
per Pix reproduces that deterministically so tests can assert exact counts.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any

import httpx

from sandbox.delivery import RetryingSender, send_in_rounds

JsonObject = Mapping[str, Any]


class FaultAction(StrEnum):
    DELIVER = "deliver"
    DUPLICATE = "duplicate"
    DROP = "drop"


@dataclass(frozen=True, slots=True)
class PixFault:
    """What happens to one Pix: sent once, sent ``copies`` times, or never sent."""

    action: FaultAction = FaultAction.DELIVER
    copies: int = 1

    def __post_init__(self) -> None:
        if self.action is FaultAction.DUPLICATE and self.copies < 2:
            raise ValueError("a duplicated Pix is sent at least twice")

    @classmethod
    def deliver(cls) -> PixFault:
        return cls(FaultAction.DELIVER)

    @classmethod
    def duplicate(cls, copies: int = 2) -> PixFault:
        return cls(FaultAction.DUPLICATE, copies)

    @classmethod
    def drop(cls) -> PixFault:
        return cls(FaultAction.DROP, 0)

    @property
    def times(self) -> int:
        return {FaultAction.DELIVER: 1, FaultAction.DROP: 0}.get(self.action, self.copies)


class BodyShape(StrEnum):
    """Body shapes seen from real providers; only the first is the BCB standard."""

    STANDARD = "standard"  # {"pix": [{...}, {...}]}
    SINGLE_OBJECT = "single_object"  # {"pix": {...}}
    FLAT = "flat"  # {...}
    ARRAY = "array"  # [{...}, {...}]


_SINGLE_ITEM_SHAPES = frozenset({BodyShape.SINGLE_OBJECT, BodyShape.FLAT})


def random_plan(
    pix: Sequence[JsonObject],
    rng: random.Random,
    *,
    drop_rate: float = 0.0,
    duplicate_rate: float = 0.0,
    max_copies: int = 3,
) -> dict[str, PixFault]:
    """A reproducible plan: each Pix is dropped, duplicated or delivered by chance."""
    if drop_rate < 0 or duplicate_rate < 0 or drop_rate + duplicate_rate > 1:
        raise ValueError("rates must be non-negative and add up to at most 1")
    plan: dict[str, PixFault] = {}
    for item in pix:
        roll = rng.random()
        if roll < drop_rate:
            plan[item["endToEndId"]] = PixFault.drop()
        elif roll < drop_rate + duplicate_rate:
            plan[item["endToEndId"]] = PixFault.duplicate(rng.randint(2, max(2, max_copies)))
        else:
            plan[item["endToEndId"]] = PixFault.deliver()
    return plan


@dataclass
class DeliveryReport:
    """What the sender knows happened; a receiver should count the same."""

    requests_sent: int = 0  # HTTP POSTs, retries included
    pix_delivered: int = 0  # distinct Pix acknowledged (2xx) at least once
    copies_delivered: int = 0  # Pix items in acknowledged POSTs, repeats included
    dropped: int = 0  # never sent, by plan
    skipped_without_txid: int = 0  # never sent: BCB notifies only Pix with a txid
    non_2xx_responses: int = 0
    connection_errors: int = 0
    undelivered: list[str] = field(default_factory=list)  # planned, never acknowledged
    statuses: list[int] = field(default_factory=list)

    @property
    def duplicates_sent(self) -> int:
        """Acknowledged copies beyond the first of each Pix."""
        return self.copies_delivered - self.pix_delivered


def _json_default(value: object) -> str:
    if isinstance(value, Decimal):
        return f"{value:f}"
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


class WebhookDeliverer(RetryingSender):
    """POSTs Pix to ``{webhook_url}/pix`` following a fault plan.

    ``notify_without_txid`` is off by default because the BCB spec only notifies Pix that
    carry a txid; those are exactly the Pix a merchant must find by polling.
    """

    def __init__(
        self,
        webhook_url: str,
        *,
        secret_header: str | None = None,
        secret: str | None = None,
        batch_size: int = 1,
        shape: BodyShape = BodyShape.STANDARD,
        shuffle: bool = False,
        notify_without_txid: bool = False,
        max_attempts: int = 3,
        retry_delay: float = 0.5,
        rng: random.Random | None = None,
        client: httpx.Client | None = None,
        timeout: float = 5.0,
        sleep: Callable[[float], None] = time.sleep,
        extra_headers: Mapping[str, str] | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if shape in _SINGLE_ITEM_SHAPES and batch_size != 1:
            raise ValueError(f"shape {shape} carries one Pix per request")
        super().__init__(
            max_attempts=max_attempts,
            retry_delay=retry_delay,
            client=client,
            timeout=timeout,
            sleep=sleep,
            secret_header=secret_header,
            secret=secret,
            extra_headers=extra_headers,
        )
        url = httpx.URL(webhook_url)
        # BCB appends "/pix" to the registered URL; stripping a trailing slash first
        # avoids the "//pix" some providers produce.
        self.target_url = str(url.copy_with(path=url.path.rstrip("/") + "/pix"))
        self._batch_size = batch_size
        self._shape = shape
        self._shuffle = shuffle
        self._notify_without_txid = notify_without_txid
        self._rng = rng if rng is not None else random.Random(0)

    def deliver(
        self, pix: Sequence[JsonObject], plan: Mapping[str, PixFault] | None = None
    ) -> DeliveryReport:
        """Send ``pix`` following ``plan`` (by endToEndId; missing means deliver once).

        All first copies go out before any repeat, so a repeat always reaches the
        receiver as a later, separate request — the case a deduplicator must handle.
        """
        report = DeliveryReport()
        copies: list[tuple[str, JsonObject, int]] = []
        for item in pix:
            if not self._notify_without_txid and not item.get("txid"):
                report.skipped_without_txid += 1
                continue
            times = (plan or {}).get(item["endToEndId"], PixFault.deliver()).times
            if times == 0:
                report.dropped += 1
            else:
                copies.append((item["endToEndId"], item, times))

        acknowledged = send_in_rounds(
            copies,
            lambda batch: self.post(self.target_url, self._body(batch), report),
            batch_size=self._batch_size,
            shuffle=self._rng.shuffle if self._shuffle else None,
        )
        report.pix_delivered = len(acknowledged)
        report.copies_delivered = sum(acknowledged.values())
        report.undelivered = [e2eid for e2eid, _, _ in copies if e2eid not in acknowledged]
        return report

    def _body(self, batch: Sequence[JsonObject]) -> bytes:
        payload: object
        if self._shape is BodyShape.STANDARD:
            payload = {"pix": list(batch)}
        elif self._shape is BodyShape.SINGLE_OBJECT:
            payload = {"pix": batch[0]}
        elif self._shape is BodyShape.FLAT:
            payload = batch[0]
        else:
            payload = list(batch)
        return json.dumps(payload, ensure_ascii=False, default=_json_default).encode("utf-8")
