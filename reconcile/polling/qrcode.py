"""Polling the QR code API: the Pix received (``GET /pix``), the charges the merchant
created (``cob``, ``cobv``, ``cobr``: what the merchant expects to be paid) and the Pix
Automático recurrences (``rec``: their calendars say which cycles need a charge)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from functools import partial
from typing import Any, Protocol

from sqlalchemy import Engine

from reconcile.inbox import NewItem
from reconcile.payloads.automatico import cobr_callback_items, rec_callback_items
from reconcile.payloads.charges import charge_item
from reconcile.payloads.pix import PixItem, pix_items
from reconcile.polling.store import OnNew, PollResult, walk_and_store


class QrCodeSource(Protocol):
    def list_received_pix(
        self, inicio: datetime, fim: datetime, page_size: int = ...
    ) -> Iterator[dict[str, Any]]: ...
    def list_cobs(self, inicio: datetime, fim: datetime) -> Iterator[dict[str, Any]]: ...
    def list_cobvs(self, inicio: datetime, fim: datetime) -> Iterator[dict[str, Any]]: ...
    def list_cobrs(self, inicio: datetime, fim: datetime) -> Iterator[dict[str, Any]]: ...
    def list_recs(self, inicio: datetime, fim: datetime) -> Iterator[dict[str, Any]]: ...


def _received(raw: dict[str, Any]) -> list[NewItem]:
    return pix_items(PixItem.model_validate(raw), raw)


def poll_received_pix(
    api: QrCodeSource,
    engine: Engine,
    inicio: datetime,
    fim: datetime,
    *,
    page_size: int = 500,
    on_new: OnNew = None,
    on_progress: Callable[[int], object] | None = None,
) -> PollResult:
    """Walk ``GET /pix`` over [inicio, fim]; each Pix and each of its refunds is an item."""
    found = api.list_received_pix(inicio, fim, page_size=page_size)
    return walk_and_store(
        engine, found, _received, on_new, what="pix", page=page_size, on_progress=on_progress
    )


def poll_charges(
    api: QrCodeSource, engine: Engine, start: datetime, end: datetime, on_new: OnNew = None
) -> dict[str, PollResult]:
    """Every charge and recurrence created in [start, end], by kind."""
    return {
        kind: walk_and_store(
            engine, listing(start, end), partial(_one_charge, kind), on_new, what=kind
        )
        for kind, listing in (
            ("cob", api.list_cobs),
            ("cobv", api.list_cobvs),
            ("cobr", api.list_cobrs),
            ("rec", api.list_recs),
        )
    }


def _one_charge(kind: str, raw: dict[str, Any]) -> list[NewItem]:
    # A recurring charge is both a charge expected to be paid and the state of its
    # collection (the same item its webhook would have made, so the two deduplicate).
    if kind == "rec":
        return rec_callback_items(raw)
    if kind == "cobr":
        return [charge_item(kind, raw), *cobr_callback_items(raw)]
    return [charge_item(kind, raw)]
