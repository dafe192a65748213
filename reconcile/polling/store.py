"""Storing what an API walk finds: every item enters the inbox as ``source=poll``, one
transaction per page, so a long walk commits as it goes and an interruption loses nothing
already seen; an item a webhook already brought is a counted sighting, not redone."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from pydantic import ValidationError
from sqlalchemy import Engine

from reconcile.db import session_scope
from reconcile.inbox import NewItem, store_items
from reconcile.logs import get_logger
from reconcile.models import Source
from reconcile.payloads import PayloadInvalid
from reconcile.provider.errors import NotFound
from reconcile.unread import Skipped, remember, skipped

log = get_logger(__name__)

K = TypeVar("K")

OnNew = Callable[[list[int]], object] | None
"""Called with the ids of new inbox items after each commit: the dispatcher in a worker,
processing on the spot in a command without workers."""


@dataclass
class PollResult:
    seen: int = 0
    new_ids: list[int] = field(default_factory=list)
    invalid: int = 0
    flagged: int = 0
    """Items stored with warnings: fields the API sent otherwise than documented."""
    settled: int = 0
    """Movements a webhook brought earlier that this walk's listing settled: confirmed, or
    found to disagree with what was notified (``confirm_listed``)."""


def store_polled(engine: Engine, items: list[NewItem], on_new: OnNew) -> list[int]:
    """One transaction for what one API page brought; new ids go to ``on_new``."""
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
    to_items: Callable[[dict[str, Any]], Iterable[NewItem]],
    on_new: OnNew,
    *,
    what: str,
    page: int = 200,
    on_progress: Callable[[int], object] | None = None,
    on_page: Callable[[list[dict[str, Any]]], object] | None = None,
    window: tuple[datetime, datetime] | None = None,
) -> PollResult:
    """Store what an API walk finds, ``page`` items per transaction. ``on_page`` gets
    what the API sent for each page once its items are stored. ``window``: the listing
    ``what`` was read over it, and the items it skipped are remembered once the walk has
    reached its end (``reconcile/unread.py``): the days they may belong to were not read
    whole."""
    result = PollResult()
    unread: list[Skipped] = []
    batch: list[NewItem] = []
    listed: list[dict[str, Any]] = []

    def flush() -> None:
        result.new_ids.extend(store_polled(engine, batch, on_new))
        batch.clear()
        if on_page is not None and listed:
            on_page(listed.copy())
        listed.clear()
        if on_progress is not None:
            on_progress(result.seen)

    for raw in found:
        result.seen += 1
        listed.append(raw)
        try:
            items = list(to_items(raw))
        except (PayloadInvalid, ValidationError, ValueError) as exc:
            # The API is authoritative but not infallible: count it (without its content,
            # which may hold personal data) and keep walking.
            result.invalid += 1
            log.warning("poll_invalid_item", what=what)
            if window is not None:
                unread.append(skipped(what, raw, exc))
            continue
        # Each item carries its references (the index is written when it is stored) and
        # its warnings, like a webhook's.
        result.flagged += sum(1 for item in items if item.warnings)
        batch.extend(items)
        if len(batch) >= page:
            flush()
    flush()
    if window is not None:
        remember(engine, what, *window, unread)
    if result.flagged:
        log.info("poll_items_flagged", what=what, items=result.flagged)
    return result


def ask_each(
    ids: Iterable[K], ask: Callable[[K], dict[str, Any]], *, unknown: str
) -> Iterator[tuple[K, dict[str, Any]]]:
    """Each id with what the API answers for it, asked one at a time as the caller walks.
    An id the provider does not know is logged as ``unknown`` (the event, never the id,
    which may be personal data) and skipped: what stored it is judged for that elsewhere
    (confirmation flags a notification the provider does not know)."""
    for one in ids:
        try:
            answer = ask(one)
        except NotFound:
            log.info(unknown)
            continue
        yield one, answer
