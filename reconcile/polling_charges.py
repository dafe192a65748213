"""Polling the charges the merchant created (cob, cobv, cobr): the expected payments."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any, Protocol

from sqlalchemy import Engine

from reconcile.payloads.charges import charge_item
from reconcile.polling import PollResult, walk_and_store


class ChargeSource(Protocol):
    def list_cobs(self, inicio: datetime, fim: datetime) -> Iterator[dict[str, Any]]: ...
    def list_cobvs(self, inicio: datetime, fim: datetime) -> Iterator[dict[str, Any]]: ...
    def list_cobrs(self, inicio: datetime, fim: datetime) -> Iterator[dict[str, Any]]: ...


@dataclass
class ChargesPolled:
    by_kind: dict[str, PollResult] = field(default_factory=dict)


def poll_charges(
    api: ChargeSource,
    engine: Engine,
    start: datetime,
    end: datetime,
    on_new: Callable[[list[int]], object] | None = None,
) -> ChargesPolled:
    polled = ChargesPolled()
    for kind, listing in (
        ("cob", api.list_cobs),
        ("cobv", api.list_cobvs),
        ("cobr", api.list_cobrs),
    ):
        polled.by_kind[kind] = walk_and_store(
            engine, listing(start, end), partial(charge_item, kind), on_new
        )
    return polled
