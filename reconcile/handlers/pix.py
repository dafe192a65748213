"""Pix received and their refunds, from the BCB callback or from polling."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import bindparam, delete, insert, select, text, update
from sqlmodel import Session

from reconcile.db import dialect_of, table_of
from reconcile.handlers.common import (
    PermanentItemError,
    insert_ignore,
    parse_payload,
    require_key,
    validate,
)
from reconcile.logs import get_logger
from reconcile.models import Confirmation, InboxItem, PixReceived, PixRefund, Source
from reconcile.money import parse_amount, to_cents
from reconcile.payloads import UNKNOWN_STATUS
from reconcile.payloads.pix import Devolucao, PixItem, is_documented
from reconcile.payloads.tolerant import ItemWarning, read_timestamp
from reconcile.timeutil import as_utc, utcnow

log = get_logger(__name__)

REFUND_RANK = {"EM_PROCESSAMENTO": 1, "DEVOLVIDO": 2, "NAO_REALIZADO": 2}


@dataclass(frozen=True)
class PixFields:
    """What a ``pix_received`` row takes from a Pix payload."""

    end_to_end_id: str
    txid: str | None
    valor: Decimal | None
    horario: str | None
    chave: str | None
    info_pagador: str | None
    payer_document: str | None = None
    payer_name: str | None = None
    components: str | None = None


def pix_fields(raw: Any) -> PixFields:
    """The fields of a ``pix_received`` row in a Pix payload (``PermanentItemError`` when
    it has none to give)."""
    # Nearly every Pix a webhook brings is written as the BCB documents it: read as such
    # it costs a worker a fraction of the tolerant model's validation, with the same row
    # (tests/reconcile/test_documented_pix.py compares the two).
    if is_documented(raw):
        return PixFields(
            raw["endToEndId"],
            raw.get("txid"),
            parse_amount(raw["valor"]),
            raw["horario"],
            raw.get("chave"),
            raw.get("infoPagador"),
        )
    return tolerant_pix_fields(raw)


def tolerant_pix_fields(raw: Any) -> PixFields:
    """``pix_fields`` through the tolerant model, whatever the payload holds."""
    pix = validate(PixItem, raw, "Pix payload")
    require_key(pix, "Pix payload")
    assert pix.endToEndId is not None
    payer = pix.pagador
    return PixFields(
        pix.endToEndId,
        pix.txid,
        pix.valor,
        pix.horario,
        pix.chave,
        pix.infoPagador,
        (payer.cpf or payer.cnpj) if payer else None,
        payer.nome if payer else None,
        pix.components_json(),
    )


def pix_row(item: InboxItem) -> dict[str, Any]:
    """The ``pix_received`` row an item makes (``PermanentItemError`` when it cannot)."""
    pix = pix_fields(parse_payload(item))
    horario = read_timestamp(pix.horario)
    now = utcnow()
    amount = to_cents(pix.valor) if pix.valor is not None else None
    # Listed by the provider's API with its amount: that is the confirmation. Notified
    # only, or an amount nobody could read: to be looked up before the money counts.
    confirmed = item.source == Source.POLL.value and amount is not None
    log.debug(
        "pix_received",
        item_id=item.id,
        end_to_end_id=pix.end_to_end_id,
        txid=pix.txid,
        amount_cents=amount,
        horario_valid=horario is not None,
        payer_document=pix.payer_document,
    )
    return {
        "end_to_end_id": pix.end_to_end_id,
        "txid": pix.txid,
        "amount_cents": amount,
        "horario": horario,
        "horario_raw": pix.horario,
        "chave": pix.chave,
        "info_pagador": pix.info_pagador,
        "payer_document": pix.payer_document,
        "payer_name": pix.payer_name,
        "components": pix.components,
        "inbox_item_id": item.id,
        "created_at": now,
        "confirmation": (Confirmation.CONFIRMED.value if confirmed else Confirmation.PENDING.value),
        "confirmed_amount_cents": amount if confirmed else None,
        "confirmed_at": now if confirmed else None,
        "next_check_at": None if confirmed else now,
    }


def handle_pix(session: Session, item: InboxItem) -> None:
    insert_ignore(session, PixReceived, pix_row(item))


def refund_row(item: InboxItem) -> dict[str, Any]:
    """The ``pix_refund`` row an item makes (``PermanentItemError`` when it cannot)."""
    payload = parse_payload(item)
    end_to_end_id = payload.get("endToEndId") if isinstance(payload, dict) else None
    if not isinstance(end_to_end_id, str):
        raise PermanentItemError("refund without the endToEndId of its Pix")
    refund = validate(Devolucao, payload.get("devolucao"), "refund payload")
    require_key(refund, "refund payload")
    # The SPI's id stands in for the merchant's when a sender leaves the latter out, until
    # a sighting with both replaces it (``write_refunds``).
    refund_id = refund.id or refund.rtrId
    assert refund_id is not None
    if len(end_to_end_id) > 32:
        raise PermanentItemError("refund of a Pix whose endToEndId is not one")
    times = refund.horario
    status = refund.status or UNKNOWN_STATUS
    amount = to_cents(refund.valor) if refund.valor is not None else None
    return {
        "end_to_end_id": end_to_end_id,
        "refund_id": refund_id,
        "rtr_id": refund.rtrId,
        "amount_cents": amount,
        "natureza": refund.natureza,
        "status": status,
        "motivo": refund.motivo,
        "requested_at": read_timestamp(times.solicitacao) if times else None,
        "settled_at": read_timestamp(times.liquidacao) if times else None,
        "rank": REFUND_RANK.get(status, 0),
        "inbox_item_id": item.id,
        **refund_confirmation(item, amount),
    }


def handle_pix_refund(session: Session, item: InboxItem) -> None:
    write_refunds(session, [refund_row(item)])


def refund_confirmation(item: InboxItem, amount_cents: int | None) -> dict[str, object]:
    """Listed by the API (polling ``GET /pix``) with its amount: confirmed as it stands.
    Notified only, or its amount unreadable: it counts once ``GET /pix/{e2eid}`` shows it."""
    now = utcnow()
    polled = item.source == Source.POLL.value and amount_cents is not None
    return {
        "confirmation": Confirmation.CONFIRMED.value if polled else Confirmation.PENDING.value,
        "confirmed_amount_cents": amount_cents if polled else None,
        "confirmed_at": now if polled else None,
        "next_check_at": None if polled else now,
    }


# What a sighting may leave out: absent from it, the stored value stands.
REFUND_DETAILS = ("rtr_id", "amount_cents", "natureza", "motivo", "requested_at", "settled_at")
CONFIRMATION_COLUMNS = ("confirmation", "confirmed_amount_cents", "confirmed_at", "next_check_at")
REFUND_COLUMNS = (
    "end_to_end_id",
    "refund_id",
    *REFUND_DETAILS,
    "status",
    "rank",
    "inbox_item_id",
    *CONFIRMATION_COLUMNS,
)
# Stored rows looked up per statement: well under SQLite's limit on bound parameters.
_LOOKUP_CHUNK = 500


def write_refunds(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Each refund onto its one ``pix_refund`` row, whichever of its ids a sighting carries.

    A refund is known by the merchant's ``id`` (unique per Pix) and by the SPI's ``rtrId``,
    and a notification may carry either or both: a row found by either, under the same
    Pix, is the refund's, and a sighting with both ties together rows that were each known
    by one (the stored ``refund_id`` is then the merchant's). Rows are read, merged and
    written back, so the refunds of the batch's Pix are locked first: another worker
    writing a sighting of the same refund meanwhile would make a second row."""
    if not rows:
        return
    pixes = sorted({row["end_to_end_id"] for row in rows})
    _lock_refunds_of(session, pixes)
    table = table_of(PixRefund)
    stored = _stored_refunds(session, pixes)
    now = utcnow()
    inserts: list[dict[str, Any]] = []
    updates: list[dict[str, Any]] = []
    gone: list[int] = []
    second: list[int] = []
    for known, sightings in _by_refund(stored, rows):
        if not sightings:
            continue
        second += _second_rtr_ids(known, sightings)
        if not known:
            state = _fold(sightings[0], sightings[1:])
            inserts.append({**_written(state), "updated_at": now})
            continue
        # Rows of one refund stored apart (before its ids were tied): the oldest row keeps
        # the refund, the rest is folded into it from the least advanced fact on.
        keep = min(known, key=lambda row: row["id"])
        ordered = sorted(known, key=lambda row: (row["rank"], row["updated_at"], row["id"]))
        state = _fold(ordered[0], [*ordered[1:], *sightings])
        gone += [row["id"] for row in known if row is not keep]
        if len(known) > 1 or _written(state) != _written(keep):
            updates.append(
                {"row_id": keep["id"], **_prefixed(_written(state)), "new_updated_at": now}
            )
    if gone:
        session.execute(delete(table).where(table.c.id.in_(gone)))
    if updates:
        session.execute(
            update(table)
            .where(table.c.id == bindparam("row_id"))
            .values({name: bindparam(f"new_{name}") for name in (*REFUND_COLUMNS, "updated_at")}),
            updates,
        )
    if inserts:
        session.execute(insert(table), inserts)
    if second:
        _flag(session, second, SECOND_RTR_ID)


SECOND_RTR_ID = ItemWarning(
    "/devolucao/rtrId",
    "one rtrId per refund id (the id is unique per Pix): a second rtrId came under this"
    " refund's id, and both sightings went into its one pix_refund row",
)


def _second_rtr_ids(known: list[dict[str, Any]], sightings: list[dict[str, Any]]) -> list[int]:
    """The items of ``sightings`` that bring another ``rtrId`` under a refund's id than
    the one it already had (stored, or earlier in the batch). The BCB makes the id unique
    per Pix, so the two are merged into one row as ever; but two SPI returns under one id
    is either a sender's mistake or a second refund, and must not pass unseen."""
    seen = [row["rtr_id"] for row in (*sorted(known, key=lambda row: row["id"]), *sightings)]
    first = next((rtr_id for rtr_id in seen if rtr_id is not None), None)
    return [row["inbox_item_id"] for row in sightings if row["rtr_id"] not in (None, first)]


def _flag(session: Session, item_ids: list[int], warning: ItemWarning) -> None:
    """``warning`` added to these items' own (once: a replay adds it no second time). Rare,
    so read and written back one item at a time."""
    table = table_of(InboxItem)
    found = session.execute(select(table.c.id, table.c.warnings).where(table.c.id.in_(item_ids)))
    for item_id, stored in list(found):
        warnings: list[dict[str, str]] = json.loads(stored) if stored else []
        if warning.as_json() in warnings:
            continue
        flagged = json.dumps([*warnings, warning.as_json()], ensure_ascii=False)
        session.execute(update(table).where(table.c.id == item_id).values(warnings=flagged))
        log.info("refund_second_rtr_id", item_id=item_id)


def _lock_refunds_of(session: Session, pixes: list[str]) -> None:
    """On PostgreSQL, the refunds of these Pix to this transaction until it ends, taken in
    one order by every worker so that none waits on another in a circle. SQLite has one
    writer at a time already (``BEGIN IMMEDIATE``)."""
    if dialect_of(session) != "postgresql":
        return
    keys = sorted({_lock_key(end_to_end_id) for end_to_end_id in pixes})
    session.execute(
        text("SELECT count(pg_advisory_xact_lock(k)) FROM unnest(CAST(:keys AS bigint[])) AS k"),
        {"keys": keys},
    ).scalar_one()


def _lock_key(end_to_end_id: str) -> int:
    digest = hashlib.blake2b(f"pix_refund:{end_to_end_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _stored_refunds(session: Session, pixes: list[str]) -> list[dict[str, Any]]:
    table = table_of(PixRefund)
    columns = [table.c[name] for name in ("id", *REFUND_COLUMNS, "updated_at")]
    found: list[dict[str, Any]] = []
    for start in range(0, len(pixes), _LOOKUP_CHUNK):
        chunk = pixes[start : start + _LOOKUP_CHUNK]
        result = session.execute(select(*columns).where(table.c.end_to_end_id.in_(chunk)))
        found += [_utc(dict(row)) for row in result.mappings()]
    return found


def _utc(row: dict[str, Any]) -> dict[str, Any]:
    """SQLite gives naive UTC back: compared as they are, an unchanged time would differ."""
    return {k: as_utc(v) if isinstance(v, datetime) else v for k, v in row.items()}


def _by_refund(
    stored: list[dict[str, Any]], sightings: Sequence[dict[str, Any]]
) -> Iterable[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """Stored rows and sightings, grouped by the refund they are of (stored rows first,
    sightings in the batch's order). Either id ties two of them, under the same Pix. The
    two ids are not told apart: the ``rtrId`` already stands in for a missing ``id``, and
    a merchant who took an ``rtrId`` for its own id names that very refund."""
    parent: dict[tuple[str, str], tuple[str, str]] = {}

    def root(name: tuple[str, str]) -> tuple[str, str]:
        parent.setdefault(name, name)
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    def names(row: dict[str, Any]) -> list[tuple[str, str]]:
        ids = (row["refund_id"], row["rtr_id"])
        return [(row["end_to_end_id"], i) for i in ids if i is not None]

    everything = [*stored, *sightings]
    for row in everything:
        first, *others = names(row)
        for other in others:
            parent[root(other)] = root(first)
    groups: dict[tuple[str, str], tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for at, row in enumerate(everything):
        known, seen = groups.setdefault(root(names(row)[0]), ([], []))
        (known if at < len(stored) else seen).append(row)
    return groups.values()


def _fold(first: dict[str, Any], later: Iterable[dict[str, Any]]) -> dict[str, Any]:
    state = first
    for seen in later:
        state = _merged(state, seen)
    return state


def _merged(known: dict[str, Any], seen: dict[str, Any]) -> dict[str, Any]:
    """What is known of a refund once ``seen``, a later sighting, is taken in.

    An older status never overwrites a newer one; it may still fill what is missing. A
    field the sighting leaves out keeps its stored value. A repeat of the same claim
    (status and amount) keeps the row's confirmation and its item: only a new claim must
    be confirmed again, and the item that made it is the one that stated it."""
    newer = seen["rank"] >= known["rank"]
    claim = newer and (
        seen["rank"] > known["rank"]
        or seen["status"] != known["status"]
        or seen["amount_cents"] not in (None, known["amount_cents"])
    )
    merged = dict(known)
    ahead, behind = (seen, known) if newer else (known, seen)
    for name in REFUND_DETAILS:
        merged[name] = ahead[name] if ahead[name] is not None else behind[name]
    merged["refund_id"] = _merchant_id(known) or _merchant_id(seen) or known["refund_id"]
    if claim:
        for name in ("status", "rank", "inbox_item_id", *CONFIRMATION_COLUMNS):
            merged[name] = seen[name]
    elif (
        newer
        and seen["confirmation"] == Confirmation.CONFIRMED.value
        and known["confirmation"] not in Confirmation.counted()
    ):
        # A repeat listed by the API itself confirms what was only notified (or looked up
        # in vain before).
        for name in CONFIRMATION_COLUMNS:
            merged[name] = seen[name]
    return merged


def _merchant_id(row: dict[str, Any]) -> str | None:
    """The merchant's id of a row, ``None`` where the SPI's stands in for it."""
    refund_id: str = row["refund_id"]
    return None if refund_id == row["rtr_id"] else refund_id


def _written(row: dict[str, Any]) -> dict[str, Any]:
    return {name: row[name] for name in REFUND_COLUMNS}


def _prefixed(row: dict[str, Any]) -> dict[str, Any]:
    # A bound parameter may not share a column's name in an UPDATE's SET clause.
    return {f"new_{name}": value for name, value in row.items()}
