"""One refund (devolução), one ``pix_refund`` row. The BCB names a refund twice: ``id``,
the merchant's, unique per Pix, and ``rtrId``, the SPI's, known once the refund reaches
the SPI; a notification may carry either or both. Whichever arrives first, and in whatever
order, every sighting lands on the same row; a repeat that says less erases nothing; and
the nightly run judges each refund once, whatever rows earlier versions left behind —
on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, select, text
from sqlmodel import col

from migrations.apply import upgrade
from reconcile.confirmation import waive_confirmation
from reconcile.db import create_db_engine, session_scope
from reconcile.handlers.pix import handle_pix_refund, refund_row, write_refunds
from reconcile.inbox import store_items
from reconcile.matching.judgement import Sources
from reconcile.models import InboxItem, PixRefund, ReconciliationItem, Source
from reconcile.nightly import NightlyResult, reconcile_day
from reconcile.payloads.pix import pix_callback_items
from reconcile.processing import process_items
from reconcile.timeutil import BUSINESS_TZ, as_utc, business_day_bounds

E2E = "E12345678202611261500REFDUP00001"
RTR = "D12345678202611261500REFDUP00001"
PIX_DAY = date(2026, 11, 26)


def _pix(*refunds: dict[str, Any]) -> dict[str, Any]:
    """A ``POST /webhooks/qrcode/pix`` body: the Pix of 10.00 and the refunds given."""
    return {
        "pix": [
            {
                "endToEndId": E2E,
                "valor": "10.00",
                "horario": "2026-11-26T15:00:00Z",
                "devolucoes": list(refunds),
            }
        ]
    }


PROCESSING_BY_RTR = {"rtrId": RTR, "valor": "3.00", "status": "EM_PROCESSAMENTO"}
SETTLED_BY_BOTH = {"id": "dev1", "rtrId": RTR, "valor": "3.00", "status": "DEVOLVIDO"}
SETTLED_BY_ID = {"id": "dev1", "valor": "3.00", "status": "DEVOLVIDO"}
PROCESSING_BY_ID = {"id": "dev1", "valor": "3.00", "status": "EM_PROCESSAMENTO"}


def _deliver(engine: Engine, *bodies: dict[str, Any], source: Source = Source.WEBHOOK) -> None:
    """Each body as the receiver stores it (``/webhooks/qrcode/pix``), then all the new
    items processed together, as one worker batch."""
    new: list[int] = []
    for body in bodies:
        with session_scope(engine) as session:
            new += store_items(session, pix_callback_items(body), source=source).new_ids
    report = process_items(engine, new)
    assert report.failed == []


def _refunds(engine: Engine) -> list[PixRefund]:
    with session_scope(engine) as session:
        rows = session.execute(select(PixRefund).order_by(col(PixRefund.id))).scalars().all()
        session.expunge_all()
    return list(rows)


def _refund_day(row: PixRefund) -> date:
    """The business day the engine dates a refund by (``refund_time``)."""
    when = row.settled_at or row.requested_at or row.updated_at
    return as_utc(when).astimezone(BUSINESS_TZ).date()


def _run(engine: Engine, day: date) -> NightlyResult:
    # No statement is stored here: read, it would make every refund a break; unread, the
    # refund is judged by the API alone, which is what these tests are about.
    return reconcile_day(
        engine,
        day,
        now=business_day_bounds(day)[1] + timedelta(hours=2),
        sources=Sources(statement_read=False),
    )


def _verdicts(engine: Engine, result: NightlyResult, ref: str) -> list[ReconciliationItem]:
    with session_scope(engine) as session:
        rows = session.execute(
            select(ReconciliationItem).where(
                col(ReconciliationItem.run_id) == result.run_id,
                col(ReconciliationItem.ref) == ref,
            )
        ).scalars()
        found = list(rows)
        session.expunge_all()
    return found


def _judged_once(engine: Engine, row: PixRefund) -> ReconciliationItem:
    """The refund's day and the Pix's day both run, and the refund is judged once."""
    _run(engine, PIX_DAY)
    (verdict,) = _verdicts(engine, _run(engine, _refund_day(row)), RTR)
    return verdict


@pytest.mark.parametrize("together", [False, True], ids=["two-deliveries", "one-batch"])
@pytest.mark.parametrize(
    "sightings",
    [(PROCESSING_BY_RTR, SETTLED_BY_BOTH), (SETTLED_BY_BOTH, PROCESSING_BY_RTR)],
    ids=["processing-first", "settled-first"],
)
def test_a_refund_seen_by_its_rtr_id_and_by_both_ids_is_one_row(
    engine: Engine, sightings: Sequence[dict[str, Any]], together: bool
) -> None:
    bodies = [_pix(refund) for refund in sightings]
    if together:
        _deliver(engine, *bodies)
    else:
        for body in bodies:
            _deliver(engine, body)

    (row,) = _refunds(engine)
    assert (row.end_to_end_id, row.refund_id, row.rtr_id) == (E2E, "dev1", RTR)
    assert (row.status, row.amount_cents) == ("DEVOLVIDO", 300)
    # Policy "none": the refund counts as notified (else it waits for the API's word).
    waive_confirmation(engine)
    verdict = _judged_once(engine, row)
    assert (verdict.actual_cents, verdict.status, verdict.exception) == (300, "matched", False)


def test_a_refund_seen_by_each_id_alone_becomes_one_row_once_both_are_seen(
    engine: Engine,
) -> None:
    # Nothing ties the first two together yet: two rows, each judged under its own ref.
    _deliver(engine, _pix(PROCESSING_BY_ID))
    _deliver(engine, _pix(PROCESSING_BY_RTR))
    assert len(_refunds(engine)) == 2

    _deliver(engine, _pix(SETTLED_BY_BOTH))
    (row,) = _refunds(engine)
    assert (row.refund_id, row.rtr_id, row.status) == ("dev1", RTR, "DEVOLVIDO")
    # And the merchant's id alone still finds it afterwards.
    _deliver(engine, _pix({**SETTLED_BY_ID, "motivo": "pedido cancelado"}))
    (row,) = _refunds(engine)
    assert (row.refund_id, row.rtr_id, row.status) == ("dev1", RTR, "DEVOLVIDO")
    assert row.motivo == "pedido cancelado"
    _judged_once(engine, row)


FULL = {
    "id": "d1",
    "rtrId": RTR,
    "valor": "3.00",
    "status": "DEVOLVIDO",
    "natureza": "ORIGINAL",
    "motivo": "Devolução do pedido 42",
    "horario": {
        "solicitacao": "2026-11-26T16:00:00Z",
        "liquidacao": "2026-11-26T16:00:05Z",
    },
}


def _details(row: PixRefund) -> tuple[object, ...]:
    return (
        row.refund_id,
        row.rtr_id,
        row.status,
        row.amount_cents,
        row.natureza,
        row.motivo,
        row.requested_at and as_utc(row.requested_at),
        row.settled_at and as_utc(row.settled_at),
        row.confirmation,
    )


KNOWN = (
    "d1",
    RTR,
    "DEVOLVIDO",
    300,
    "ORIGINAL",
    "Devolução do pedido 42",
    datetime(2026, 11, 26, 16, 0, tzinfo=UTC),
    datetime(2026, 11, 26, 16, 0, 5, tzinfo=UTC),
    "not_required",
)


@pytest.mark.parametrize(
    "repeat",
    [
        {"id": "d1", "valor": "3.00", "status": "DEVOLVIDO"},
        # An older status, known by the SPI's id alone: it changes nothing either.
        {"rtrId": RTR, "valor": "3.00", "status": "EM_PROCESSAMENTO"},
    ],
    ids=["same-status-by-id", "older-status-by-rtr-id"],
)
def test_a_repeat_that_says_less_erases_nothing(engine: Engine, repeat: dict[str, Any]) -> None:
    _deliver(engine, _pix(FULL))
    # Policy "none": the refund counts as notified.
    waive_confirmation(engine)
    (before,) = _refunds(engine)
    assert _details(before) == KNOWN

    _deliver(engine, _pix(repeat))
    (row,) = _refunds(engine)
    assert _details(row) == KNOWN
    assert row.inbox_item_id == before.inbox_item_id
    verdict = _judged_once(engine, row)
    assert (verdict.status, verdict.exception) == ("matched", False)


def test_a_repeat_with_a_new_fact_still_needs_confirming(engine: Engine) -> None:
    """Only a repeat keeps the confirmation: another amount is a claim to look up again."""
    _deliver(engine, _pix(FULL))
    waive_confirmation(engine)
    _deliver(engine, _pix({"id": "d1", "valor": "4.00", "status": "DEVOLVIDO"}))
    (row,) = _refunds(engine)
    assert (row.amount_cents, row.confirmation) == (400, "pending")
    assert (row.rtr_id, row.natureza) == (RTR, "ORIGINAL")


OTHER_RTR = "D12345678202611261500REFDUP00002"


@pytest.mark.parametrize("together", [False, True], ids=["two-deliveries", "one-batch"])
def test_a_second_rtr_id_under_one_refund_id_is_flagged_on_its_item(
    engine: Engine, together: bool
) -> None:
    """The BCB makes a refund's ``id`` unique per Pix: a second ``rtrId`` under it keeps
    the one row as ever, and the item that brought it says so (``pixrecon events show``),
    never the ids themselves. Replayed, it is flagged no second time."""
    first = {"id": "d1", "rtrId": RTR, "valor": "3.00", "status": "DEVOLVIDO"}
    second = {**first, "rtrId": OTHER_RTR}
    if together:
        _deliver(engine, _pix(first, second))
    else:
        _deliver(engine, _pix(first))
        _deliver(engine, _pix(second))
    (row,) = _refunds(engine)
    assert (row.refund_id, row.status) == ("d1", "DEVOLVIDO")

    def flags() -> dict[str, list[dict[str, str]]]:
        with session_scope(engine) as session:
            items = session.execute(
                select(InboxItem).where(col(InboxItem.kind) == "pix_refund")
            ).scalars()
            return {item.key: json.loads(item.warnings or "[]") for item in items}

    flagged = flags()
    assert flagged[f"refund:{RTR}:DEVOLVIDO"] == []
    (warning,) = flagged[f"refund:{OTHER_RTR}:DEVOLVIDO"]
    assert warning["pointer"] == "/devolucao/rtrId"
    assert "a second rtrId" in warning["expected"]
    assert RTR not in warning["expected"]
    assert OTHER_RTR not in warning["expected"]

    with session_scope(engine) as session:
        again = session.execute(
            select(InboxItem).where(col(InboxItem.key) == f"refund:{OTHER_RTR}:DEVOLVIDO")
        ).scalar_one()
        handle_pix_refund(session, again)
    assert flags() == flagged


def test_a_replayed_refund_item_changes_nothing(engine: Engine) -> None:
    _deliver(engine, _pix(PROCESSING_BY_RTR))
    _deliver(engine, _pix(SETTLED_BY_BOTH))
    (before,) = _refunds(engine)
    with session_scope(engine) as session:
        items = session.execute(
            select(InboxItem).where(col(InboxItem.kind) == "pix_refund").order_by(col(InboxItem.id))
        ).scalars()
        for item in items:
            handle_pix_refund(session, item)
    (after,) = _refunds(engine)
    assert after.model_dump() == before.model_dump()


def test_two_workers_writing_one_refund_at_once_make_one_row(engine: Engine) -> None:
    """Each reads the refund's rows before it writes: the second waits for the first."""
    new: list[int] = []
    for refund in (PROCESSING_BY_RTR, SETTLED_BY_BOTH):
        with session_scope(engine) as session:
            items = pix_callback_items(_pix(refund))
            new += store_items(session, items[1:], source=Source.WEBHOOK).new_ids
    with session_scope(engine) as session:
        first, second = (refund_row(session.get_one(InboxItem, i)) for i in new)

    def write(row: dict[str, Any]) -> None:
        with session_scope(engine) as session:
            write_refunds(session, [row])

    with ThreadPoolExecutor(1) as pool:
        with session_scope(engine) as session:
            write_refunds(session, [first])
            writing = pool.submit(write, second)
            time.sleep(0.3)
            waited = not writing.done()
        writing.result(timeout=30)
    assert waited
    (row,) = _refunds(engine)
    assert (row.refund_id, row.rtr_id, row.status) == ("dev1", RTR, "DEVOLVIDO")


def _insert_refund(connection: Any, item: int, **values: Any) -> None:
    row = {
        "end_to_end_id": E2E,
        "rtr_id": RTR,
        "amount_cents": 300,
        "natureza": None,
        "motivo": None,
        "requested_at": None,
        "settled_at": None,
        "rank": 1,
        "status": "EM_PROCESSAMENTO",
        "confirmation": "pending",
        "confirmed_amount_cents": None,
        "confirmed_at": None,
        "updated_at": datetime(2026, 11, 26, 15, 1, tzinfo=UTC),
        "item": item,
        **values,
    }
    connection.execute(
        text(
            "INSERT INTO pix_refund (end_to_end_id, refund_id, rtr_id, amount_cents, natureza, "
            "status, motivo, requested_at, settled_at, rank, inbox_item_id, updated_at, "
            "confirmation, confirmed_amount_cents, confirmed_at, check_attempts) VALUES "
            "(:end_to_end_id, :refund_id, :rtr_id, :amount_cents, :natureza, :status, :motivo, "
            ":requested_at, :settled_at, :rank, :item, :updated_at, :confirmation, "
            ":confirmed_amount_cents, :confirmed_at, 0)"
        ),
        row,
    )


def _insert_item(connection: Any) -> int:
    item: int = connection.execute(
        text(
            "INSERT INTO inbox_item (source, kind, key, payload, status, received_at, "
            "last_seen_at, webhook_count, poll_count, attempts) VALUES ('webhook', "
            "'pix_refund', :key, :payload, 'processed', :at, :at, 1, 0, 1) RETURNING id"
        ),
        {
            "key": f"refund:{RTR}:EM_PROCESSAMENTO",
            "payload": json.dumps({"endToEndId": E2E, "devolucao": PROCESSING_BY_RTR}),
            "at": datetime(2026, 11, 26, 15, 1, tzinfo=UTC),
        },
    ).scalar_one()
    return item


def _stored_twice(connection: Any) -> None:
    """What earlier versions stored for the curl sequence: the refund keyed by its rtrId
    while processing, and again by the merchant's id once settled."""
    item = _insert_item(connection)
    _insert_refund(
        connection,
        item,
        refund_id=RTR,
        requested_at=datetime(2026, 11, 26, 15, 0, 30, tzinfo=UTC),
    )
    _insert_refund(
        connection,
        item,
        refund_id="dev1",
        status="DEVOLVIDO",
        rank=2,
        natureza="ORIGINAL",
        settled_at=datetime(2026, 11, 26, 15, 2, tzinfo=UTC),
        confirmation="not_required",
    )


def test_rows_stored_twice_by_earlier_versions_are_judged_once(engine: Engine) -> None:
    with engine.begin() as connection:
        _stored_twice(connection)
    result = _run(engine, PIX_DAY)
    (verdict,) = _verdicts(engine, result, RTR)
    # The settled one speaks for the refund, not the one still processing.
    assert (verdict.status, verdict.exception) == ("matched", False)


def test_the_migration_merges_the_rows_of_one_refund(blank_url: str) -> None:
    engine = create_db_engine(blank_url)
    upgrade(engine, "0023")
    with engine.begin() as connection:
        _stored_twice(connection)
        # Another refund of the same Pix, known by its merchant's id only: left alone.
        item = connection.execute(text("SELECT max(inbox_item_id) FROM pix_refund")).scalar_one()
        _insert_refund(connection, item, refund_id="dev2", rtr_id=None, amount_cents=100)
    upgrade(engine)
    rows = _refunds(engine)
    engine.dispose()
    assert [(r.refund_id, r.rtr_id) for r in rows] == [("dev1", RTR), ("dev2", None)]
    merged = rows[0]
    assert (merged.status, merged.rank, merged.confirmation, merged.natureza) == (
        "DEVOLVIDO",
        2,
        "not_required",
        "ORIGINAL",
    )
    assert merged.requested_at is not None
    assert as_utc(merged.requested_at) == datetime(2026, 11, 26, 15, 0, 30, tzinfo=UTC)
    assert merged.settled_at is not None
    assert as_utc(merged.settled_at) == datetime(2026, 11, 26, 15, 2, tzinfo=UTC)
