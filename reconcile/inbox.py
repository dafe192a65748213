"""The inbox: every item that arrives, by webhook or by polling, stored once per business
key. Idempotency comes from the unique key and one upsert statement per dialect, never
from reading first."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    TextClause,
    and_,
    bindparam,
    case,
    func,
    insert,
    or_,
    select,
    text,
    update,
)
from sqlmodel import Session, col

from reconcile.db import dialect_of, insert_for, session_scope, table_of
from reconcile.masking import mask_text
from reconcile.models import (
    DeliveryItem,
    InboxItem,
    InboxRef,
    ItemKind,
    ItemStatus,
    Source,
    WebhookDelivery,
)
from reconcile.money import parse_amount, to_cents
from reconcile.payloads.refs import item_refs, ref_values
from reconcile.payloads.tolerant import ItemWarning
from reconcile.timeutil import as_utc, utcnow


def dump_json(value: Any) -> str:
    """JSON text of a payload parsed with ``Decimal`` numbers (kept exact, as strings)."""

    def default(obj: object) -> object:
        if isinstance(obj, Decimal):
            return str(obj)
        raise TypeError(f"not JSON serialisable: {type(obj).__name__}")

    return json.dumps(value, default=default, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class NewItem:
    kind: str
    key: str
    payload: str
    status: str = ItemStatus.PENDING.value
    warnings: tuple[ItemWarning, ...] = ()
    """Fields of the payload read otherwise than documented (kept raw, flagged)."""
    refs: tuple[str, ...] | None = None
    """Every reference the item carries; ``None``: read them from the payload."""
    stated: str | None = field(default=None, compare=False)
    """The amount it states, when its reader already has it (``_stated_amount``):
    ``digest`` then reads no JSON on the receiver's event loop."""

    def digest(self) -> str | None:
        """MD5 of the amount the item states: a webhook repeat with another digest is a
        conflicting one. ``None`` for the kinds whose repeats are not compared."""
        return self.compared()[0]

    def compared(self) -> tuple[str | None, int | None]:
        """``digest``, and the money the item states in centavos (``stated_cents``), from
        one reading of its payload at most: the second is what a conflicting repeat
        stated, kept with the item it repeats (``inbox_item.conflict_amount_cents``)."""
        if self.stated is not None:
            # Only a Pix's reader hands its amount over, in its one notation.
            return _md5(self.stated), _cents(self.stated)
        if self.kind not in _ACCOUNTS_COMPARED and self.kind not in _AMOUNT_AT:
            return None, None
        try:
            payload = json.loads(self.payload, parse_float=Decimal)
        except ValueError:
            return None, None
        return _md5(_stated_amount(self.kind, payload)), stated_cents(self.kind, payload)

    def ref_values(self) -> tuple[str, ...]:
        if self.refs is not None:
            return self.refs
        try:
            payload = json.loads(self.payload, parse_float=Decimal)
        except ValueError:
            return ()
        return ref_values(item_refs(self.kind, payload))


# A repeat of a key that states another amount (another valor for the same endToEndId, a
# first copy whose amount could not be read and a retry whose amount can): the first stays
# the item, as for every repeat, and is flagged; both deliveries keep their bodies. Only
# the amount is compared: a Pix sent again with its refunds, or a status written otherwise,
# is the same money. An accounts notification also states its payout and Pix, and a MED
# case its outcome (``_accounts_stated``).
CONFLICTING_REPEAT = ItemWarning(
    "/",
    "one amount per key: a later delivery carried this key with another amount (or, from "
    "the accounts API, another idempotencyKey, endToEndId or MED outcome; the first is "
    "kept, both deliveries' bodies are stored)",
)
_CONFLICT_MARK = "a later delivery carried this key with another amount"
_AMOUNT_AT: dict[str, tuple[str, ...]] = {
    ItemKind.PIX.value: ("valor",),
    ItemKind.PIX_REFUND.value: ("devolucao", "valor"),
}


# Accounts notifications are keyed by the provider's id and status: what else one states
# and a repeat must state alike — the money, the Pix it moved by, the payout it is for,
# and a MED case's outcome. Timestamps and free text are left out: a redelivery may
# carry them anew.
_ACCOUNTS_COMPARED = (
    ItemKind.ACCOUNTS_TRANSFER.value,
    ItemKind.ACCOUNTS_RECEIVE.value,
    (ItemKind.ACCOUNTS_REFUND.value),
    ItemKind.ACCOUNTS_CASHOUT.value,
    ItemKind.ACCOUNTS_INFRACTION.value,
)
_ACCOUNTS_STATED = ("idempotencyKey", "endToEndId", "analysisResult")
_ACCOUNTS_AMOUNTS = ("amount", "debitedAmount", "pixRefundAmount")


def _md5(amount: str | None) -> str | None:
    if amount is None:
        return None
    return hashlib.md5(amount.encode("utf-8", "surrogatepass"), usedforsecurity=False).hexdigest()


def _cents(value: Any) -> int | None:
    try:
        return to_cents(parse_amount(value))
    except (ValueError, TypeError):  # InvalidAmount among them
        return None


def _money(value: Any) -> str:
    try:
        return str(parse_amount(value))
    except (ValueError, TypeError):  # InvalidAmount among them
        return repr(value)


def _accounts_inner(payload: Any) -> dict[str, Any] | None:
    inner = next(
        (
            payload[slot]
            for slot in ("data", "payload")
            if isinstance(payload, dict) and slot in payload
        ),
        None,
    )
    return inner if isinstance(inner, dict) else None


def _accounts_stated(payload: Any) -> str | None:
    inner = _accounts_inner(payload)
    if inner is None:
        return None
    parts = [f"{name}={inner.get(name)!r}" for name in _ACCOUNTS_STATED]
    parts += [f"{name}={_money(inner[name])}" for name in _ACCOUNTS_AMOUNTS if name in inner]
    payment = inner.get("payment")
    if isinstance(payment, dict) and "amount" in payment:
        parts.append(f"payment={_money(payment['amount'])}")
    refunds = inner.get("refunds")
    for refund in refunds if isinstance(refunds, list) else [refunds] if refunds else []:
        if isinstance(refund, dict):
            parts.append(
                f"refund={refund.get('endToEndId')!r}:{_money(refund.get('pixRefundAmount'))}"
            )
    return "|".join(parts)


def _stated_amount(kind: str, payload: Any) -> str | None:
    """The amount an item states, as one text whatever its notation (for an accounts
    notification, what ``_accounts_stated`` compares); ``None`` for a kind whose repeats
    are not compared."""
    if kind in _ACCOUNTS_COMPARED:
        return _accounts_stated(payload)
    path = _AMOUNT_AT.get(kind)
    if path is None:
        return None
    found: Any = payload
    for name in path:
        found = found.get(name) if isinstance(found, dict) else None
    try:
        return str(parse_amount(found))
    except (ValueError, TypeError):  # InvalidAmount among them
        return repr(found)


# The money a person reads in an accounts notification, the first of these it carries: a
# payout's or a credit's payment, a MED case's debit, else its disputed amount, a return's.
_ACCOUNTS_MONEY: tuple[tuple[str, ...], ...] = (
    ("payment", "amount"),
    ("debitedAmount",),
    ("amount",),
    ("pixRefundAmount",),
)


def stated_cents(kind: str, payload: Any) -> int | None:
    """The money an item's payload (parsed) states, in centavos: a Pix's or a refund's
    ``valor``, an accounts notification's money (``_ACCOUNTS_MONEY``). ``None`` when it
    cannot be read, and for the kinds whose repeats are not compared. What the nightly run
    shows of a conflicting repeat: the first notification's money against the repeat's."""
    if kind in _ACCOUNTS_COMPARED:
        inner = _accounts_inner(payload)
        for money in _ACCOUNTS_MONEY:
            found: Any = inner
            for name in money:
                found = found.get(name) if isinstance(found, dict) else None
            if found is not None:
                return _cents(found)
        return None
    path = _AMOUNT_AT.get(kind)
    if path is None:
        return None
    found = payload
    for name in path:
        found = found.get(name) if isinstance(found, dict) else None
    return _cents(found)


def _conflicts(first: NewItem, again: NewItem) -> bool:
    return first.payload != again.payload and first.digest() != again.digest()


def _flagged_as_conflicting(item: NewItem) -> NewItem:
    if CONFLICTING_REPEAT in item.warnings:
        return item
    return replace(item, warnings=(*item.warnings, CONFLICTING_REPEAT))


def warnings_json(warnings: Sequence[ItemWarning]) -> str | None:
    """How an item's warnings are stored: ``None`` when there are none (most items)."""
    if not warnings:
        return None
    return json.dumps([w.as_json() for w in warnings], ensure_ascii=False)


@dataclass
class StoreResult:
    item_ids: list[int] = field(default_factory=list)
    new_ids: list[int] = field(default_factory=list)
    duplicates: int = 0
    """Items of this call that were already in the inbox (or repeated within the call)."""
    new_keys: list[str] = field(default_factory=list)
    """The keys of ``new_ids``: what this call brought first (its warnings are new facts;
    a duplicate's were counted when it first came)."""


@dataclass(frozen=True)
class Delivery:
    """A webhook request as it is kept: where it came from, its body and its items."""

    route: str
    remote_addr: str | None
    headers: Mapping[str, str]
    body: bytes
    items: Sequence[NewItem]


@dataclass
class _Sightings:
    """What a call stores, counted before it is written: how often each key comes, and
    which group (delivery) carries it first."""

    count: Counter[str]
    first: dict[str, tuple[int, NewItem]]
    conflicts: dict[str, int | None]
    """The keys a later copy of this call contradicts, with the money that copy states
    (the first such copy's: the flag is set once)."""

    @classmethod
    def of(cls, item_lists: Sequence[Sequence[NewItem]]) -> _Sightings:
        count: Counter[str] = Counter()
        first: dict[str, tuple[int, NewItem]] = {}
        conflicts: dict[str, int | None] = {}
        for index, items in enumerate(item_lists):
            for item in items:
                count[item.key] += 1
                found = first.setdefault(item.key, (index, item))
                if found[1] is not item and _conflicts(found[1], item):
                    first[item.key] = (found[0], _flagged_as_conflicting(found[1]))
                    conflicts.setdefault(item.key, item.compared()[1])
        return cls(count, first, conflicts)

    def results(
        self, item_lists: Sequence[Sequence[NewItem]], stored: Mapping[str, tuple[int, int]]
    ) -> list[StoreResult]:
        """Each group's result as if alone, from ``stored`` (key → id, sightings after the
        write). An item was created by this call exactly when all its sightings are this
        call's; it is then new for the first group that carried it."""
        results = [StoreResult() for _ in item_lists]
        for index, items in enumerate(item_lists):
            result = results[index]
            for key, count in sorted(Counter(item.key for item in items).items()):
                item_id, seen = stored[key]
                result.item_ids.append(item_id)
                if seen == self.count[key] and self.first[key][0] == index:
                    result.new_ids.append(item_id)
                    result.new_keys.append(key)
                    result.duplicates += count - 1
                else:
                    result.duplicates += count
        return results


def store_items(
    session: Session,
    items: Sequence[NewItem],
    *,
    source: Source,
    delivery_id: int | None = None,
    now: datetime | None = None,
) -> StoreResult:
    """Insert new items, count repeats of known ones; one statement for the whole batch."""
    # In UTC, as every stored time: SQLite keeps a time's wall clock and drops its zone.
    (result,) = _store_groups(session, [(delivery_id, items)], source, as_utc(now or utcnow()))
    return result


def store_deliveries(
    session: Session, deliveries: Sequence[Delivery], *, now: datetime | None = None
) -> list[StoreResult]:
    """Several webhook deliveries in the caller's one transaction (group commit): on
    PostgreSQL one statement stores the deliveries, their items and the items' references
    (``PG_GROUP_STATEMENT``); elsewhere one statement inserts the deliveries, one upserts all their
    items. Each delivery gets the result it would have had alone, in the order given: an
    item two of them carry is new for the first and a duplicate for the second."""
    if not deliveries:
        return []
    # In UTC, as every stored time: SQLite keeps a time's wall clock and drops its zone.
    now = as_utc(now or utcnow())
    if dialect_of(session) == "postgresql":
        return _store_group_pg(session.connection(), deliveries, now)
    ids = _insert_deliveries(session, deliveries, now)
    groups = [(delivery_id, d.items) for delivery_id, d in zip(ids, deliveries, strict=True)]
    return _store_groups(session, groups, Source.WEBHOOK, now)


def commit_deliveries(
    engine: Engine, deliveries: Sequence[Delivery], *, now: datetime | None = None
) -> list[StoreResult]:
    """``store_deliveries`` in a transaction of its own, committed on return. On
    PostgreSQL that is its one statement run alone (autocommit), one round trip to the
    server: the receiver's writer thread, waiting on each round trip, must win the GIL
    back from the event loop after each one, which under load costs up to the
    interpreter's switch interval (5 ms) every time — with BEGIN, three statements and
    COMMIT, most of a busy commit's time."""
    if not deliveries:
        return []
    if engine.dialect.name != "postgresql":
        with session_scope(engine) as session:
            return store_deliveries(session, deliveries, now=now)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        return _store_group_pg(connection, deliveries, now or utcnow())


def _store_group_pg(
    connection: Connection, deliveries: Sequence[Delivery], now: datetime
) -> list[StoreResult]:
    write = GroupWrite.of(deliveries, now)
    return write.results(connection.execute(PG_GROUP_STATEMENT, write.params).all())


@dataclass(frozen=True)
class GroupWrite:
    """A webhook group commit on PostgreSQL: the parameters of ``PG_GROUP_STATEMENT``, and
    how the rows it returns become each delivery's result. Apart from running it, so that
    the receiver can run it on a connection of its event loop's own."""

    params: dict[str, Any]
    item_lists: list[Sequence[NewItem]]
    seen: _Sightings

    @classmethod
    def of(cls, deliveries: Sequence[Delivery], now: datetime) -> GroupWrite:
        item_lists = [d.items for d in deliveries]
        seen = _Sightings.of(item_lists)
        delivery_rows = [
            {
                "route": d.route,
                "remote_addr": d.remote_addr,
                "headers": json.dumps(dict(d.headers), ensure_ascii=False),
                "body": d.body.hex(),
                "item_count": len(d.items),
            }
            for d in deliveries
        ]
        # A stable key order keeps concurrent batches from deadlocking.
        item_rows = [
            _conflict_columns(
                {
                    "kind": item.kind,
                    "key": key,
                    "payload": item.payload,
                    "status": item.status,
                    "d": index + 1,
                    "seen": seen.count[key],
                    "warnings": warnings_json(item.warnings),
                },
                item,
                seen,
                omit_empty=True,
            )
            for key, (index, item) in sorted(seen.first.items())
        ]
        refs = sorted(
            {(ref, key) for key, (_, item) in seen.first.items() for ref in item.ref_values()}
        )
        # Each delivery that carries a key, once: the one that created its item is that
        # item's ``delivery_id``, every other gets a link (the statement tells which).
        carried = sorted(
            {(i.key, index + 1) for index, d in enumerate(deliveries) for i in d.items}
        )
        params = {
            "deliveries": _json_rows(delivery_rows),
            "items": _json_rows(item_rows),
            "refs": _json_rows([{"ref": ref, "key": key} for ref, key in refs]),
            "carried": _json_rows([{"key": key, "d": d} for key, d in carried]),
            "now": now,
            **CONFLICT_PARAMS,
        }
        return cls(params, item_lists, seen)

    def results(self, rows: Iterable[Sequence[Any]]) -> list[StoreResult]:
        """Each delivery's result from the statement's rows (id, key, sightings)."""
        return self.seen.results(self.item_lists, {key: (id_, n) for id_, key, n in rows})


def _conflict_columns(
    row: dict[str, Any], item: NewItem, seen: _Sightings, *, omit_empty: bool = False
) -> dict[str, Any]:
    """``row`` with what a conflicting repeat is judged by: the item's digest; the money
    it states (``stated_cents``: no column, read only where it turns out to repeat a stored
    item with another digest, as the repeat's money); and, when a later copy in this call
    contradicts it, that copy's money. ``omit_empty``: leave out what is empty, which the
    JSON of a row reads as null (most rows, in the statement every delivery runs)."""
    digest, cents = item.compared()
    conflicted = item.key in seen.conflicts
    extra: dict[str, Any] = {
        "stated_cents": cents,
        "conflicted": conflicted,
        "conflict_amount_cents": seen.conflicts.get(item.key),
    }
    if omit_empty:
        # By identity: an amount of 0 is no empty value.
        extra = {name: value for name, value in extra.items() if value is not None}
        if not conflicted:
            del extra["conflicted"]
    return row | {"content_digest": digest} | extra


def _insert_deliveries(
    session: Session, deliveries: Sequence[Delivery], now: datetime
) -> list[int]:
    table = table_of(WebhookDelivery)
    stmt = insert(table).returning(table.c.id, sort_by_parameter_order=True)
    rows = [
        {
            "route": d.route,
            "remote_addr": d.remote_addr,
            "headers": json.dumps(dict(d.headers), ensure_ascii=False),
            "body": d.body,
            "item_count": len(d.items),
            "received_at": now,
        }
        for d in deliveries
    ]
    return [row[0] for row in session.execute(stmt, rows)]


# A webhook repeat that states another amount than the item flags it, once. Items stored
# before digests were kept, and kinds not compared, have none: compared with nothing. A
# copy that a later copy of its own call contradicts (``conflicted_at`` set) flags a stored
# item too: one of the two differs from it. The first time, the item also keeps when
# (``conflicted_at``: the nightly run makes it that day's exception) and the money the
# repeat stated: the call's first copy's own, when it is the one that differs from the
# item, read from the rows ``r`` (it is no column), else that of the later copy of its
# call. Items flagged before those columns were kept have neither, and stay so.
_CONFLICTING = """inbox_item.source = 'webhook'
                AND (inbox_item.content_digest <> EXCLUDED.content_digest
                    OR EXCLUDED.conflicted_at IS NOT NULL)
                AND position(CAST(:conflict_mark AS text)
                    IN coalesce(inbox_item.warnings, '')) = 0"""
_FLAG_CONFLICT = """warnings = CASE WHEN {IF}
            THEN coalesce(left(inbox_item.warnings, -1) || ', ', '[')
                || CAST(:conflict AS text) || ']'
            ELSE inbox_item.warnings END,
        conflicted_at = CASE WHEN {IF}
            THEN EXCLUDED.last_seen_at ELSE inbox_item.conflicted_at END,
        conflict_amount_cents = CASE WHEN {IF}
            THEN CASE WHEN inbox_item.content_digest <> EXCLUDED.content_digest
                THEN (SELECT r.stated_cents FROM r WHERE r.key = EXCLUDED.key)
                ELSE EXCLUDED.conflict_amount_cents END
            ELSE inbox_item.conflict_amount_cents END"""


def _flag_conflict(also: str = "") -> str:
    """The SET of ``_FLAG_CONFLICT``, its condition joined with ``also``."""
    return _FLAG_CONFLICT.replace("{IF}", f"{also}{_CONFLICTING}")


CONFLICT_PARAMS: dict[str, str] = {
    "conflict": json.dumps(CONFLICTING_REPEAT.as_json(), ensure_ascii=False),
    "conflict_mark": _CONFLICT_MARK,
}


# On PostgreSQL each statement of a group commit has one text, whatever the number of
# rows, and takes its rows as one JSON document: psycopg parses a statement's text once
# and caches it, but only up to 4 KB, so a VALUES list of a busy commit's rows was parsed
# again every commit; and psycopg dumps an array parameter element by element in Python
# (about 58 µs of CPU per inbox row over its 14 columns, against 15 µs for the row in
# JSON, which the C encoder writes). What is the same for every row of a call (the time,
# the source) is one parameter.
#
# A webhook group commit is one statement: the deliveries, their items (an item already in the
# inbox counts one more sighting), the references of the items it created, and a link
# for every other delivery that carried an item. The deliveries' sequence numbers follow
# their order (ORDER BY n), so the k-th smallest id is the k-th delivery. An item was
# created here exactly when all its sightings are this statement's.
PG_GROUP_STATEMENT = text(
    """
    WITH d AS (
        INSERT INTO webhook_delivery (
            route, remote_addr, headers, body, item_count, received_at
        )
        SELECT route, remote_addr, headers, decode(body, 'hex'), item_count,
            CAST(:now AS timestamptz)
        FROM ROWS FROM (json_to_recordset(CAST(:deliveries AS json)) AS (
            route text, remote_addr text, headers text, body text, item_count integer
        )) WITH ORDINALITY AS t(route, remote_addr, headers, body, item_count, n)
        ORDER BY n
        RETURNING id
    ), dn AS (
        SELECT id, row_number() OVER (ORDER BY id) AS n FROM d
    ), r AS (
        SELECT * FROM json_to_recordset(CAST(:items AS json)) AS t(
            kind text, key text, payload text, status text, d bigint, seen integer,
            warnings text, content_digest text, stated_cents bigint, conflicted boolean,
            conflict_amount_cents bigint
        )
    ), i AS (
        INSERT INTO inbox_item (
            source, kind, key, payload, status, delivery_id, received_at, last_seen_at,
            webhook_at, poll_at, webhook_count, poll_count, attempts, warnings,
            content_digest, conflicted_at, conflict_amount_cents
        )
        SELECT 'webhook', r.kind, r.key, r.payload, r.status, dn.id,
            CAST(:now AS timestamptz), CAST(:now AS timestamptz),
            CAST(:now AS timestamptz), NULL, r.seen, 0, 0, r.warnings, r.content_digest,
            CASE WHEN r.conflicted THEN CAST(:now AS timestamptz) END,
            r.conflict_amount_cents
        FROM r JOIN dn ON dn.n = r.d
        ORDER BY r.key
        ON CONFLICT (key) DO UPDATE SET
            last_seen_at = EXCLUDED.last_seen_at,
            webhook_count = inbox_item.webhook_count + EXCLUDED.webhook_count,
            webhook_at = coalesce(inbox_item.webhook_at, EXCLUDED.webhook_at),
            {FLAG_CONFLICT}
        RETURNING id, key, webhook_count + poll_count AS seen
    ), created AS (
        SELECT i.id, i.key, r.d FROM i JOIN r ON r.key = i.key WHERE i.seen = r.seen
    ), refs AS (
        INSERT INTO inbox_ref (ref, item_id)
        SELECT f.ref, created.id
        FROM json_to_recordset(CAST(:refs AS json)) AS f(ref text, key text)
        JOIN created ON created.key = f.key
        ORDER BY f.ref, created.id
    ), links AS (
        INSERT INTO delivery_item (item_id, delivery_id)
        SELECT i.id, dn.id
        FROM json_to_recordset(CAST(:carried AS json)) AS c(key text, d bigint)
        JOIN i ON i.key = c.key
        JOIN dn ON dn.n = c.d
        WHERE NOT EXISTS (
            SELECT 1 FROM created WHERE created.key = c.key AND created.d = c.d
        )
        ORDER BY i.id, dn.id
    )
    SELECT id, key, seen FROM i
    """.replace("{FLAG_CONFLICT}", _flag_conflict())
)
_PG_UPSERT = text(
    """
    WITH r AS (
        SELECT * FROM ROWS FROM (json_to_recordset(CAST(:rows AS json)) AS (
            kind text, key text, payload text, status text, delivery_id bigint,
            webhook_count integer, poll_count integer, warnings text, content_digest text,
            stated_cents bigint, conflicted boolean, conflict_amount_cents bigint
        )) WITH ORDINALITY AS t(
            kind, key, payload, status, delivery_id, webhook_count, poll_count, warnings,
            content_digest, stated_cents, conflicted, conflict_amount_cents, n
        )
    )
    INSERT INTO inbox_item (
        source, kind, key, payload, status, delivery_id, received_at, last_seen_at,
        webhook_at, poll_at, webhook_count, poll_count, attempts, warnings, content_digest,
        conflicted_at, conflict_amount_cents
    )
    SELECT CAST(:source AS text), kind, key, payload, status, delivery_id,
        CAST(:now AS timestamptz), CAST(:now AS timestamptz),
        CAST(:webhook_at AS timestamptz), CAST(:poll_at AS timestamptz),
        webhook_count, poll_count, 0, warnings, content_digest,
        CASE WHEN conflicted THEN CAST(:now AS timestamptz) END, conflict_amount_cents
    FROM r
    ORDER BY n
    ON CONFLICT (key) DO UPDATE SET
        last_seen_at = EXCLUDED.last_seen_at,
        webhook_count = inbox_item.webhook_count + EXCLUDED.webhook_count,
        poll_count = inbox_item.poll_count + EXCLUDED.poll_count,
        webhook_at = coalesce(inbox_item.webhook_at, EXCLUDED.webhook_at),
        poll_at = coalesce(inbox_item.poll_at, EXCLUDED.poll_at),
        {FLAG_CONFLICT}
    RETURNING id, key, webhook_count + poll_count
    """.replace("{FLAG_CONFLICT}", _flag_conflict("CAST(:source AS text) = 'webhook' AND "))
)
_PG_REFS = text(
    """
    INSERT INTO inbox_ref (ref, item_id)
    SELECT ref, item_id
    FROM json_to_recordset(CAST(:rows AS json)) AS t(ref text, item_id bigint)
    """
)
_PG_LINKS = text(
    """
    INSERT INTO delivery_item (item_id, delivery_id)
    SELECT item_id, delivery_id
    FROM json_to_recordset(CAST(:rows AS json)) AS t(item_id bigint, delivery_id bigint)
    """
)


def _json_rows(rows: Sequence[Mapping[str, Any]]) -> str:
    return json.dumps(rows, ensure_ascii=False, separators=(",", ":"))


def _execute_rows(
    session: Session, postgres: TextClause, table: Any, rows: list[dict[str, Any]]
) -> None:
    if dialect_of(session) == "postgresql":
        session.execute(postgres, {"rows": _json_rows(rows)})
    else:
        session.execute(insert(table), rows)


# Compiled once per dialect and executed with a list of rows ("insertmanyvalues"): a
# statement built around literal rows would be compiled again for every delivery.
_UPSERTS: dict[str, Any] = {}


def _upsert(dialect: str) -> Any:
    """The upsert of every dialect but PostgreSQL's (SQLite): ``_PG_UPSERT`` as SQLAlchemy
    writes it, but for the money of a call's first copy that differs from the stored
    item, which it cannot read beside its rows (``_fill_conflict_amounts``)."""
    stmt = _UPSERTS.get(dialect)
    if stmt is None:
        table = table_of(InboxItem)
        base = insert_for(dialect)(table)
        conflicting = and_(
            table.c.source == Source.WEBHOOK.value,
            base.excluded.source == Source.WEBHOOK.value,
            or_(
                table.c.content_digest != base.excluded.content_digest,
                base.excluded.conflicted_at.is_not(None),
            ),
            func.instr(func.coalesce(table.c.warnings, ""), _CONFLICT_MARK) == 0,
        )
        stmt = _UPSERTS[dialect] = base.on_conflict_do_update(
            index_elements=[table.c.key],
            set_={
                "last_seen_at": base.excluded.last_seen_at,
                "webhook_count": table.c.webhook_count + base.excluded.webhook_count,
                "poll_count": table.c.poll_count + base.excluded.poll_count,
                "webhook_at": func.coalesce(table.c.webhook_at, base.excluded.webhook_at),
                "poll_at": func.coalesce(table.c.poll_at, base.excluded.poll_at),
                "warnings": case(
                    (
                        conflicting,
                        func.coalesce(
                            func.substr(table.c.warnings, 1, func.length(table.c.warnings) - 1)
                            + ", ",
                            "[",
                        )
                        + CONFLICT_PARAMS["conflict"]
                        + "]",
                    ),
                    else_=table.c.warnings,
                ),
                "conflicted_at": case(
                    (conflicting, base.excluded.last_seen_at), else_=table.c.conflicted_at
                ),
                "conflict_amount_cents": case(
                    (conflicting, base.excluded.conflict_amount_cents),
                    else_=table.c.conflict_amount_cents,
                ),
            },
        ).returning(
            table.c.id,
            table.c.key,
            table.c.webhook_count + table.c.poll_count,
            # Flagged by this statement (``last_seen_at`` is its time).
            table.c.conflicted_at == table.c.last_seen_at,
            table.c.content_digest,
        )
    return stmt


def _fill_conflict_amounts(
    session: Session, upserted: Sequence[Sequence[Any]], seen: _Sightings
) -> None:
    """The money of each call's first copy that flagged a stored item by its other
    digest, written after the upsert in its transaction: where PostgreSQL reads it from
    the rows in the same statement (``_FLAG_CONFLICT``). Rare: no statement at all in the
    common case."""
    fills = []
    for item_id, key, _, flagged_now, digest in upserted:
        if not flagged_now or digest is None:
            continue
        copy_digest, cents = seen.first[key][1].compared()
        if copy_digest not in (None, digest):
            fills.append({"item_id": item_id, "cents": cents})
    if fills:
        table = table_of(InboxItem)
        session.execute(
            update(table)
            .where(table.c.id == bindparam("item_id"))
            .values(conflict_amount_cents=bindparam("cents")),
            fills,
        )


def _store_groups(
    session: Session,
    groups: Sequence[tuple[int | None, Sequence[NewItem]]],
    source: Source,
    now: datetime,
) -> list[StoreResult]:
    """Upsert the items of every group at once; each group's result as if alone."""
    item_lists = [items for _, items in groups]
    seen = _Sightings.of(item_lists)
    sightings, first = seen.count, seen.first
    if not first:
        return [StoreResult() for _ in groups]
    is_webhook = source is Source.WEBHOOK
    rows = [
        _conflict_columns(
            {
                "kind": item.kind,
                "key": key,
                "payload": item.payload,
                "status": item.status,
                "delivery_id": groups[index][0],
                "webhook_count": sightings[key] if is_webhook else 0,
                "poll_count": 0 if is_webhook else sightings[key],
                "warnings": warnings_json(item.warnings),
            },
            item,
            seen,
        )
        # A stable key order keeps concurrent batches from deadlocking on PostgreSQL.
        for key, (index, item) in sorted(first.items())
    ]
    shared = {
        "source": source.value,
        "received_at": now,
        "last_seen_at": now,
        "webhook_at": now if is_webhook else None,
        "poll_at": None if is_webhook else now,
        "attempts": 0,
    }
    dialect = dialect_of(session)
    if dialect == "postgresql":
        upserted = session.execute(
            _PG_UPSERT,
            {
                "rows": _json_rows(rows),
                "now": now,
                "source": source.value,
                "webhook_at": shared["webhook_at"],
                "poll_at": shared["poll_at"],
                **CONFLICT_PARAMS,
            },
        ).all()
    else:
        upserted = session.execute(
            _upsert(dialect), [_as_columns(row, now) | shared for row in rows]
        ).all()
        _fill_conflict_amounts(session, upserted, seen)
    stored = {row[1]: (row[0], row[2]) for row in upserted}
    _index(session, groups, first, stored, sightings)
    return seen.results(item_lists, stored)


def _as_columns(row: dict[str, Any], now: datetime) -> dict[str, Any]:
    """A row of ``_conflict_columns`` as the table's columns."""
    columns = {name: value for name, value in row.items() if name not in _NOT_COLUMNS}
    return columns | {"conflicted_at": now if row["conflicted"] else None}


_NOT_COLUMNS = ("stated_cents", "conflicted")


def _index(
    session: Session,
    groups: Sequence[tuple[int | None, Sequence[NewItem]]],
    first: Mapping[str, tuple[int, NewItem]],
    stored: Mapping[str, tuple[int, int]],
    sightings: Counter[str],
) -> None:
    """In the items' own transaction, one statement each: the references of the items
    this call created, and the deliveries that repeated an item (the one that created it
    is its ``delivery_id``) — none at all in the common case of new items only."""
    created = {key for key in first if stored[key][1] == sightings[key]}
    refs = sorted({(ref, stored[key][0]) for key in created for ref in first[key][1].ref_values()})
    if refs:
        _execute_rows(
            session,
            _PG_REFS,
            table_of(InboxRef),
            [{"ref": ref, "item_id": item_id} for ref, item_id in refs],
        )
    links = sorted(
        {
            (stored[item.key][0], delivery_id)
            for index, (delivery_id, items) in enumerate(groups)
            if delivery_id is not None
            for item in items
            if item.key not in created or first[item.key][0] != index
        }
    )
    if links:
        _execute_rows(
            session,
            _PG_LINKS,
            table_of(DeliveryItem),
            [{"item_id": item_id, "delivery_id": delivery_id} for item_id, delivery_id in links],
        )


def claim_for_redispatch(
    session: Session, *, older_than: datetime, limit: int, now: datetime | None = None
) -> list[int]:
    """Pending items nobody has (re)sent for a while: stamp them and return their ids.

    SKIP LOCKED lets several sweepers run at once without handing out the same rows.
    """
    now = now or utcnow()
    stale = (
        select(col(InboxItem.id))
        .where(
            col(InboxItem.status) == ItemStatus.PENDING.value,
            func.coalesce(InboxItem.dispatched_at, InboxItem.received_at) < older_than,
        )
        .order_by(col(InboxItem.received_at))
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    stmt = (
        update(InboxItem)
        .where(col(InboxItem.id).in_(stale.scalar_subquery()))
        .values(dispatched_at=now)
        .returning(col(InboxItem.id))
    )
    return sorted(session.execute(stmt).scalars().all())


def oldest_pending_received_at(session: Session) -> datetime | None:
    stmt = select(func.min(InboxItem.received_at)).where(
        col(InboxItem.status) == ItemStatus.PENDING.value
    )
    value: datetime | None = session.execute(stmt).scalar_one_or_none()
    return value


def replay(session: Session, item_id: int) -> InboxItem | None:
    """Make an item pending again (after a fix for what failed it, or to re-run it)."""
    item = session.get(InboxItem, item_id)
    if item is None:
        return None
    item.status = ItemStatus.PENDING.value
    item.error = None
    item.dispatched_at = None
    item.processed_at = None
    return item


def ignore(session: Session, item_id: int, reason: str) -> InboxItem | None:
    """An operator's decision that an item needs no processing; the reason is kept, a
    CPF or CNPJ typed into it masked (as a case's note is)."""
    item = session.get(InboxItem, item_id)
    if item is None:
        return None
    item.status = ItemStatus.IGNORED.value
    item.error = f"ignored: {mask_text(reason)}"
    return item
