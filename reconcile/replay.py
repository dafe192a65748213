"""Replaying inbox items: making them pending again after whatever failed them was fixed,
one item or a whole selection (failed since a time, of a kind, carrying a reference).

A replay respects dedupe: a processed item is never made pending again by a selection, and
one asked for by id only with ``force`` (its writes are keyed, so processing it again
changes nothing it already did). The flip is one conditional ``UPDATE`` per chunk, so two
replays at once, or a worker finishing an item meanwhile, flip an item once. Every replay,
dry runs included, is recorded in ``operator_action`` with who, when, what and how many."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, select, update
from sqlmodel import col

from reconcile.db import session_scope, table_of
from reconcile.models import InboxItem, InboxRef, ItemStatus, OperatorAction
from reconcile.timeutil import utcnow

# Statuses a selection replays when none is named: what did not go through.
NOT_PROCESSED = (ItemStatus.FAILED, ItemStatus.UNSUPPORTED)
CHUNK = 1000


class NothingSelected(ValueError):
    """A replay needs an id or at least one selector: never "everything" by accident."""


@dataclass(frozen=True)
class Selection:
    item_id: int | None = None
    since: datetime | None = None
    kind: str | None = None
    ref: str | None = None
    statuses: tuple[ItemStatus, ...] = ()
    limit: int | None = None
    force: bool = False

    def __post_init__(self) -> None:
        if self.item_id is None and not (self.since or self.kind or self.ref or self.statuses):
            raise NothingSelected(
                "name an item id, or select with --since, --kind, --ref or --status"
            )
        if self.item_id is not None and (self.since or self.kind or self.ref or self.statuses):
            raise NothingSelected("an item id replays that item alone: leave out the selectors")

    def wanted_statuses(self) -> tuple[str, ...]:
        if self.item_id is not None:
            every = tuple(ItemStatus)
            allowed = (
                every if self.force else tuple(s for s in every if s is not ItemStatus.PROCESSED)
            )
            return tuple(s.value for s in allowed)
        chosen = self.statuses or NOT_PROCESSED
        # A selection never takes a processed item: that would be processing it twice.
        return tuple(s.value for s in chosen if s is not ItemStatus.PROCESSED)

    def as_json(self) -> str:
        values: dict[str, Any] = {
            k: v for k, v in asdict(self).items() if v not in (None, (), False)
        }
        if self.since is not None:
            values["since"] = self.since.isoformat()
        if self.statuses:
            values["statuses"] = [s.value for s in self.statuses]
        return json.dumps(values, sort_keys=True)


@dataclass(frozen=True)
class Chosen:
    id: int
    kind: str
    key: str
    status: str
    received_at: datetime


@dataclass
class ReplayResult:
    chosen: list[Chosen] = field(default_factory=list)
    flipped: list[int] = field(default_factory=list)
    """Made pending by this replay (an item flipped meanwhile by someone else is not)."""
    refused: Chosen | None = None
    """The item asked for by id when it is processed and ``force`` was not given."""
    action_id: int | None = None

    def by_kind(self) -> dict[str, int]:
        return dict(Counter(item.kind for item in self.chosen))


def _select(selection: Selection) -> Any:
    inbox = table_of(InboxItem)
    stmt = select(inbox.c.id, inbox.c.kind, inbox.c.key, inbox.c.status, inbox.c.received_at)
    if selection.item_id is not None:
        return stmt.where(inbox.c.id == selection.item_id)
    stmt = stmt.where(inbox.c.status.in_(selection.wanted_statuses()))
    if selection.since is not None:
        stmt = stmt.where(inbox.c.received_at >= selection.since)
    if selection.kind is not None:
        stmt = stmt.where(inbox.c.kind == selection.kind)
    if selection.ref is not None:
        stmt = stmt.where(
            inbox.c.id.in_(select(col(InboxRef.item_id)).where(col(InboxRef.ref) == selection.ref))
        )
    stmt = stmt.order_by(inbox.c.id)
    if selection.limit is not None:
        stmt = stmt.limit(selection.limit)
    return stmt


def _chunks(ids: Sequence[int]) -> Iterator[list[int]]:
    for start in range(0, len(ids), CHUNK):
        yield list(ids[start : start + CHUNK])


def replay_items(
    engine: Engine, selection: Selection, *, actor: str, dry_run: bool = False
) -> ReplayResult:
    """Select, flip to pending (unless ``dry_run``) and record, in one transaction. The
    caller sends ``flipped`` to the workers after it returns (after the commit)."""
    result = ReplayResult()
    with session_scope(engine) as session:
        rows = session.execute(_select(selection)).all()
        result.chosen = [Chosen(*row) for row in rows]
        if selection.item_id is not None and result.chosen:
            only = result.chosen[0]
            if only.status not in selection.wanted_statuses():
                result.refused, result.chosen = only, []
        if not dry_run and result.chosen:
            inbox = table_of(InboxItem)
            wanted = (
                selection.wanted_statuses()
                if selection.item_id is None
                else tuple(s.value for s in ItemStatus)
            )
            for chunk in _chunks([item.id for item in result.chosen]):
                flipped = session.execute(
                    update(inbox)
                    .where(inbox.c.id.in_(chunk), inbox.c.status.in_(wanted))
                    .values(
                        status=ItemStatus.PENDING.value,
                        error=None,
                        dispatched_at=None,
                        processed_at=None,
                    )
                    .returning(inbox.c.id)
                )
                result.flipped += [int(item_id) for (item_id,) in flipped]
        action = OperatorAction(
            action="replay",
            actor=actor,
            at=utcnow(),
            selection=selection.as_json(),
            dry_run=dry_run,
            count=len(result.chosen) if dry_run else len(result.flipped),
            detail=json.dumps(result.by_kind(), sort_keys=True),
        )
        session.add(action)
        session.flush()
        result.action_id = action.id
    return result


def replays(engine: Engine, limit: int = 20) -> list[OperatorAction]:
    """The latest replays, newest first."""
    with session_scope(engine) as session:
        stmt = (
            select(OperatorAction)
            .where(col(OperatorAction.action) == "replay")
            .order_by(col(OperatorAction.id).desc())
            .limit(limit)
        )
        found = list(session.execute(stmt).scalars())
        session.expunge_all()
        return found
