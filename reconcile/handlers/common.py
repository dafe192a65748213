"""What every handler shares: parsing an item's payload, keyed writes."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from sqlmodel import Session, SQLModel

from reconcile.db import dialect_of, insert_for, table_of
from reconcile.models import InboxItem
from reconcile.payloads import Tolerant, pointer, violations
from reconcile.timeutil import utcnow

M = TypeVar("M", bound=BaseModel)


class PermanentItemError(Exception):
    """The item can never be processed as it is; retrying would not help."""


def parse_payload(item: InboxItem) -> Any:
    try:
        return json.loads(item.payload, parse_float=Decimal)
    except ValueError:
        raise PermanentItemError("payload is not JSON") from None


def validate(model: type[M], raw: Any, what: str) -> M:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{v['property']}: {v['message']}" for v in violations(exc))
        raise PermanentItemError(f"invalid {what}: {problems}") from None


def require_key(model: Tolerant, what: str) -> None:
    """Items are stored only with their key, but a payload can be mended by hand (or be
    older than the reader): without the key there is nothing to write."""
    if model.key_found():
        return
    keys = {pointer([name]) for name in type(model).KEYS}
    problems = [
        f"{w.pointer}: expected {w.expected}" for w in model.warnings() if w.pointer in keys
    ]
    raise PermanentItemError(
        f"invalid {what}: " + ("; ".join(problems) or f"{', '.join(sorted(keys))}: missing")
    )


def insert_ignore(session: Session, model: type[SQLModel], values: dict[str, Any]) -> None:
    session.execute(
        insert_for(dialect_of(session))(table_of(model)).values(values).on_conflict_do_nothing()
    )


def upsert_latest(
    session: Session,
    model: type[SQLModel],
    key: list[str],
    values: dict[str, Any],
    on_update: Callable[[Any], dict[str, Any]] | None = None,
) -> None:
    """Insert, or update the existing row unless it already holds a later fact (``rank``).

    Notifications arrive unordered: a PROCESSING seen after LIQUIDATED must not win.
    ``on_update``: given the row offered (``excluded``), columns to write otherwise than
    as offered when a row is updated (expressions over the stored row may say how).
    """
    table = table_of(model)
    values = {**values, "updated_at": utcnow()}
    stmt = insert_for(dialect_of(session))(table).values(values)
    update = {name: stmt.excluded[name] for name in values if name not in key}
    if on_update is not None:
        update.update(on_update(stmt.excluded))
    session.execute(
        stmt.on_conflict_do_update(
            index_elements=[table.c[name] for name in key],
            set_=update,
            where=table.c.rank <= stmt.excluded.rank,
        )
    )


def insert_ignore_many(
    session: Session, model: type[SQLModel], rows: Sequence[dict[str, Any]]
) -> None:
    """``insert_ignore`` of a batch: one statement, its parameters sent together."""
    if rows:
        table = table_of(model)
        stmt = insert_for(dialect_of(session))(table).on_conflict_do_nothing()
        session.execute(stmt, list(rows))
