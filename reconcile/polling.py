"""Polling the provider is a primary source: every Pix it lists enters the same inbox as
``source=poll``; one that a webhook already brought is a no-op (counted, not redone)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from pydantic import ValidationError
from sqlalchemy import Engine

from reconcile.db import session_scope
from reconcile.inbox import NewItem, store_items
from reconcile.logs import get_logger
from reconcile.models import Source
from reconcile.payloads import PayloadInvalid
from reconcile.payloads.pix import PixItem, pix_items

log = get_logger(__name__)


class ReceivedPixSource(Protocol):
    def list_received_pix(
        self, inicio: datetime, fim: datetime, page_size: int = ...
    ) -> Iterator[dict[str, Any]]: ...


@dataclass
class PollResult:
    seen: int = 0
    new_ids: list[int] = field(default_factory=list)
    invalid: int = 0


def store_polled(
    engine: Engine, items: list[NewItem], on_new: Callable[[list[int]], object] | None
) -> list[int]:
    """One transaction for what one API page brought; new ids go to the workers."""
    if not items:
        return []
    with session_scope(engine) as session:
        new_ids = store_items(session, items, source=Source.POLL).new_ids
    if on_new is not None and new_ids:
        on_new(new_ids)
    return new_ids


def walk_and_store(
    engine: Engine,
    found: Iterator[dict[str, Any]],
    to_item: Callable[[dict[str, Any]], NewItem],
    on_new: Callable[[list[int]], object] | None,
    *,
    page: int = 200,
) -> PollResult:
    """Store what an API walk finds, a page per transaction."""
    result = PollResult()
    batch: list[NewItem] = []
    for raw in found:
        result.seen += 1
        try:
            batch.append(to_item(raw))
        except (PayloadInvalid, ValidationError, ValueError):
            # The API is authoritative but not infallible: count it, keep walking.
            result.invalid += 1
            continue
        if len(batch) >= page:
            result.new_ids.extend(store_polled(engine, batch, on_new))
            batch = []
    result.new_ids.extend(store_polled(engine, batch, on_new))
    return result


def poll_received_pix(
    api: ReceivedPixSource,
    engine: Engine,
    inicio: datetime,
    fim: datetime,
    *,
    page_size: int = 500,
    on_new: Callable[[list[int]], object] | None = None,
    on_progress: Callable[[int], object] | None = None,
) -> PollResult:
    """Walk ``GET /pix`` over [inicio, fim]; store one batch per page so that a long walk
    commits as it goes and an interruption loses nothing already seen."""
    result = PollResult()
    batch: list[NewItem] = []

    def flush() -> None:
        result.new_ids.extend(store_polled(engine, batch, on_new))
        if on_progress is not None:
            on_progress(result.seen)
        batch.clear()

    for raw in api.list_received_pix(inicio, fim, page_size=page_size):
        result.seen += 1
        try:
            pix = PixItem.model_validate(raw)
        except ValidationError:
            # The API is authoritative but not infallible; a malformed entry is logged
            # (without its content) rather than stopping the walk.
            result.invalid += 1
            log.warning("poll_invalid_pix")
            continue
        batch.extend(pix_items(pix, raw))
        if len(batch) >= page_size:
            flush()
    flush()
    log.info("poll_received_pix", seen=result.seen, new=len(result.new_ids), invalid=result.invalid)
    return result
