"""Actors: thin, take ids, idempotent. The work itself lives in ``reconcile``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import dramatiq
from sqlalchemy import Engine

from reconcile.db import UNAVAILABLE_ERRORS
from reconcile.logs import get_logger
from reconcile.processing import process_items
from worker.broker import INBOX_QUEUE

log = get_logger(__name__)


@dataclass(frozen=True)
class Actors:
    process_inbox_items: dramatiq.Actor[[list[int]], None]

    def send_items(self, item_ids: Sequence[int]) -> None:
        self.process_inbox_items.send(list(item_ids))


def declare_actors(broker: dramatiq.Broker, engine: Engine) -> Actors:
    """Declare the actors on ``broker``, bound to ``engine`` (no module-level globals, so a
    test can run several brokers and databases side by side)."""

    def process_inbox_items(item_ids: list[int]) -> None:
        try:
            report = process_items(engine, item_ids)
        except UNAVAILABLE_ERRORS as exc:
            raise dramatiq.Retry(f"database unavailable: {type(exc).__name__}") from None
        log.debug(
            "inbox_items_processed",
            processed=len(report.processed),
            failed=len(report.failed),
            unsupported=len(report.unsupported),
            skipped=len(report.skipped),
        )

    declare = dramatiq.actor(
        broker=broker,
        actor_name="process_inbox_items",
        queue_name=INBOX_QUEUE,
        # Back off to a minute at most; past that the sweeper is the safety net, since
        # the inbox row stays pending.
        max_retries=10,
        min_backoff=500,
        max_backoff=60_000,
    )
    return Actors(process_inbox_items=declare(process_inbox_items))
