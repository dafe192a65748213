"""Polling the QR code API: the Pix received (``GET /pix``), the charges the merchant
created (``cob``, ``cobv``, ``cobr``: what the merchant expects to be paid) and the Pix
Automático recurrences (``rec``: their calendars say which cycles need a charge)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from functools import partial
from typing import Any, Protocol

from sqlalchemy import Engine, Select, func, select, update
from sqlmodel import col
from structlog import get_logger

from reconcile.confirmation import confirm_listed
from reconcile.db import session_scope
from reconcile.handlers.automatico import calendar_of
from reconcile.inbox import NewItem
from reconcile.matching.context import REFUND_SENT
from reconcile.models import PixRefund, Recurrence, StatementEntry
from reconcile.payloads.automatico import cobr_callback_items, rec_callback_items
from reconcile.payloads.charges import charge_item
from reconcile.payloads.pix import api_pix_items
from reconcile.polling.store import OnNew, PollResult, ask_each, walk_and_store

log = get_logger(__name__)


class QrCodeSource(Protocol):
    def list_received_pix(
        self, inicio: datetime, fim: datetime, page_size: int = ...
    ) -> Iterator[dict[str, Any]]: ...
    def list_cobs(self, inicio: datetime, fim: datetime) -> Iterator[dict[str, Any]]: ...
    def list_cobvs(self, inicio: datetime, fim: datetime) -> Iterator[dict[str, Any]]: ...
    def list_cobrs(self, inicio: datetime, fim: datetime) -> Iterator[dict[str, Any]]: ...
    def list_recs(self, inicio: datetime, fim: datetime) -> Iterator[dict[str, Any]]: ...


class PixSource(Protocol):
    def get_pix(self, end_to_end_id: str) -> dict[str, Any]: ...


class RecurrenceSource(Protocol):
    def get_rec(self, id_rec: str) -> dict[str, Any]: ...


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
    """Walk ``GET /pix`` over [inicio, fim]; each Pix and each of its refunds is an item.
    A Pix or refund a webhook brought first is confirmed by being listed."""
    found = api.list_received_pix(inicio, fim, page_size=page_size)
    settled = 0

    def confirm(listed: list[dict[str, Any]]) -> None:
        nonlocal settled
        found = confirm_listed(engine, listed)
        settled += len(found.confirmed) + len(found.mismatched)

    result = walk_and_store(
        engine,
        found,
        api_pix_items,
        on_new,
        what="pix",
        page=page_size,
        on_progress=on_progress,
        on_page=confirm,
        window=(inicio, fim),
    )
    result.settled = settled
    return result


def refresh_refunds_in_progress(
    api: PixSource, engine: Engine, on_new: OnNew = None, *, limit: int = 500
) -> PollResult:
    """Each Pix with a refund still in progress here, asked for again (``GET
    /pix/{e2eid}``). ``GET /pix`` lists a Pix by when it was received: a refund of an
    earlier day's Pix that settles without a notification would stay in progress here for
    good, and its debit in the statement would read as a refund nobody notified."""
    e2e = col(PixRefund.end_to_end_id)
    in_progress = select(e2e).where(
        func.upper(col(PixRefund.status)) == "EM_PROCESSAMENTO", e2e.is_not(None)
    )
    return _ask_for_refunded_pix(api, engine, in_progress, e2e, on_new, limit)


def ask_refunded_pix_of_statement(
    api: PixSource,
    engine: Engine,
    start: datetime,
    end: datetime,
    on_new: OnNew = None,
    *,
    limit: int = 500,
) -> PollResult:
    """Each Pix whose refund the statement booked in [start, end] without the refund being
    known here as settled, asked for (``GET /pix/{e2eid}``). ``GET /pix`` lists a Pix by
    when it was received: a refund of an earlier day's Pix that no notification announced
    would be found only by polling that day again, so the verdict on the day of its debit
    would change with whether the earlier day was re-run."""
    line = StatementEntry
    settled = (
        select(col(PixRefund.id))
        .where(
            col(PixRefund.rtr_id) == col(line.end_to_end_id),
            func.upper(col(PixRefund.status)) == "DEVOLVIDO",
        )
        .exists()
    )
    named = col(line.original_end_to_end_id)
    unsettled = select(named).where(
        col(line.type) == "DEBIT",
        col(line.category).in_(REFUND_SENT),
        named.is_not(None),
        col(line.booked_at) >= start,
        col(line.booked_at) <= end,
        ~settled,
    )
    return _ask_for_refunded_pix(api, engine, unsettled, named, on_new, limit)


def _ask_for_refunded_pix(
    api: PixSource,
    engine: Engine,
    query: Select[Any],
    e2e: Any,
    on_new: OnNew,
    limit: int,
) -> PollResult:
    """Each Pix ``query`` names (by ``e2e``), once, asked for and stored as polled: its
    refunds come with it."""
    with session_scope(engine) as session:
        ids = list(session.execute(query.group_by(e2e).order_by(e2e).limit(limit)).scalars())
    found = ask_each(ids, api.get_pix, unknown="refunded_pix_unknown_to_provider")
    return walk_and_store(
        engine, (pix for _, pix in found), api_pix_items, on_new, what="refunded Pix"
    )


def poll_charges(
    api: QrCodeSource, engine: Engine, start: datetime, end: datetime, on_new: OnNew = None
) -> dict[str, PollResult]:
    """Every charge and recurrence created in [start, end], by kind."""
    return {
        kind: walk_and_store(
            engine,
            listing(start, end),
            partial(_one_charge, kind),
            on_new,
            what=kind,
            window=(start, end),
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


def describe_recurrences(api: RecurrenceSource, engine: Engine, *, limit: int = 500) -> PollResult:
    """A recurrence's notification says its status, not its calendar: ask the API
    (``GET /rec/{idRec}``) for each one still without it, so its cycles can be checked."""
    with session_scope(engine) as session:
        ids = list(
            session.execute(
                select(col(Recurrence.id_rec))
                .where(col(Recurrence.periodicity).is_(None))
                .limit(limit)
            ).scalars()
        )
    result = PollResult()
    for id_rec, found in ask_each(ids, api.get_rec, unknown="recurrence_unknown_to_provider"):
        result.seen += 1
        calendar = calendar_of(found)
        if "periodicity" not in calendar:
            result.invalid += 1
            continue
        with session_scope(engine) as session:
            session.execute(
                update(Recurrence)
                .where(col(Recurrence.id_rec) == id_rec, col(Recurrence.periodicity).is_(None))
                .values(**calendar)
            )
    return result
