"""What every handler shares: parsing an item's payload, keyed writes."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from sqlalchemy import String, Table, TextClause, text
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.schema import ScalarElementColumnDefault
from sqlalchemy.types import TypeEngine
from sqlmodel import Session, SQLModel

from reconcile.db import dialect_of, insert_for, table_of
from reconcile.models import Confirmation, InboxItem, Source
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


def confirmation_columns(
    item: InboxItem, polled: dict[str, Any], notified: dict[str, Any]
) -> dict[str, Any]:
    """A row's confirmation as its item brings it (docs/design.md §1.5): polled, the API's
    word, confirmed as it stands; notified, to be looked up now. ``polled`` and
    ``notified`` are what each kind keeps beside that."""
    now = utcnow()
    if item.source == Source.POLL.value:
        return {
            "confirmation": Confirmation.CONFIRMED.value,
            "confirmed_at": now,
            "next_check_at": None,
            **polled,
        }
    return {
        "confirmation": Confirmation.PENDING.value,
        "confirmed_at": None,
        "next_check_at": now,
        **notified,
    }


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
    """``insert_ignore`` of a batch (rows with the same columns): one statement, its
    parameters sent together; on PostgreSQL, as one JSON document."""
    if not rows:
        return
    table = table_of(model)
    if dialect_of(session) == "postgresql":
        rows = _with_defaults(table, rows)
        stmt = _json_insert(table, tuple(rows[0]))
        session.execute(stmt, {"rows": json.dumps(rows, default=_json_value, **_COMPACT)})
        return
    session.execute(insert_for(dialect_of(session))(table).on_conflict_do_nothing(), list(rows))


# A batch's rows go to PostgreSQL as one JSON parameter, read back by json_to_recordset:
# psycopg dumps the parameters of a multi-row insert one by one in Python, which was 40 %
# of a worker's CPU on a batch of Pix (py-spy), where the C JSON encoder writes the same
# rows for a fraction. Text columns are read as ``text`` and the insert checks their length,
# so a value too long fails its item as a parameter does (an explicit cast would cut it).
_COMPACT: dict[str, Any] = {"ensure_ascii": False, "separators": (",", ":")}
_JSON_INSERTS: dict[tuple[str, tuple[str, ...]], TextClause] = {}
_POSTGRESQL: Dialect = postgresql.dialect()  # type: ignore[no-untyped-call]


def _json_value(value: object) -> object:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise TypeError("a time without its zone cannot be stored")
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not a column value")


def _with_defaults(table: Table, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with the Python-side scalar defaults of the columns they leave out (an
    INSERT written as text does not apply them)."""
    missing = {
        column.name: column.default.arg
        for column in table.columns
        if column.name not in rows[0] and isinstance(column.default, ScalarElementColumnDefault)
    }
    return [{**row, **missing} for row in rows] if missing else list(rows)


def _json_insert(table: Table, names: tuple[str, ...]) -> TextClause:
    stmt = _JSON_INSERTS.get((table.name, names))
    if stmt is None:
        types = ", ".join(f'"{name}" {_recordset_type(table.c[name].type)}' for name in names)
        columns = ", ".join(f'"{name}"' for name in names)
        stmt = _JSON_INSERTS[(table.name, names)] = text(
            f'INSERT INTO "{table.name}" ({columns}) SELECT {columns} '  # noqa: S608 (metadata)
            f"FROM json_to_recordset(CAST(:rows AS json)) AS t({types}) "
            "ON CONFLICT DO NOTHING"
        )
    return stmt


def _recordset_type(kind: TypeEngine[Any]) -> str:
    if isinstance(kind, String):
        return "text"
    return str(kind.compile(dialect=_POSTGRESQL))
