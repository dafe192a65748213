from __future__ import annotations

from decimal import Decimal

import pytest
from sqlalchemy import Engine, select
from sqlmodel import col

from reconcile.db import create_db_engine, session_scope
from reconcile.handlers import BATCH_HANDLERS, BatchHandler
from reconcile.handlers import pix as pix_handlers
from reconcile.inbox import NewItem, dump_json, store_items
from reconcile.models import InboxItem, PixReceived, PixRefund, Source
from reconcile.processing import process_items
from tests.factories import pix


def _store(engine: Engine, payload: dict[str, object], key: str = "pix:k") -> int:
    with session_scope(engine) as session:
        result = store_items(
            session,
            [NewItem(kind="pix", key=key, payload=dump_json(payload))],
            source=Source.WEBHOOK,
        )
    return result.new_ids[0]


@pytest.mark.parametrize(
    ("valor", "cents"),
    [("110.00", 11000), (Decimal("110.1"), 11010), (Decimal("0.07"), 7), (3, 300)],
)
def test_pix_becomes_one_received_row_with_exact_cents(
    engine: Engine, valor: object, cents: int
) -> None:
    body = pix(valor=valor, horario="2026-11-22T15:00:00.000-03:00")
    item_id = _store(engine, body)
    report = process_items(engine, [item_id])
    assert report.processed == [item_id]
    with session_scope(engine) as session:
        row = session.execute(select(PixReceived)).scalar_one()
        item = session.get(InboxItem, item_id)
    assert row.amount_cents == cents
    assert row.end_to_end_id == body["endToEndId"]
    assert row.horario is not None
    assert row.horario.hour == 18  # 15:00 at -03:00 is 18:00 UTC
    assert row.payer_document == "12345678909"
    assert item is not None
    assert item.status == "processed"


def test_processing_twice_changes_nothing(engine: Engine) -> None:
    item_id = _store(engine, pix())
    process_items(engine, [item_id])
    again = process_items(engine, [item_id, item_id])
    assert again.processed == []
    assert again.skipped == [item_id]
    with session_scope(engine) as session:
        assert len(session.execute(select(PixReceived)).all()) == 1


def test_invalid_date_is_kept_raw_not_fatal(engine: Engine) -> None:
    item_id = _store(engine, pix(horario="2020-13-45T99:00:00Z"))
    assert process_items(engine, [item_id]).processed == [item_id]
    with session_scope(engine) as session:
        row = session.execute(select(PixReceived)).scalar_one()
    assert row.horario is None
    assert row.horario_raw == "2020-13-45T99:00:00Z"


def test_unreadable_payload_marks_item_failed_with_reason(engine: Engine) -> None:
    item_id = _store(engine, {"endToEndId": "short", "valor": "1.00", "horario": "x"})
    report = process_items(engine, [item_id])
    assert report.failed == [item_id]
    with session_scope(engine) as session:
        item = session.get(InboxItem, item_id)
        assert session.execute(select(PixReceived)).first() is None
    assert item is not None
    assert item.status == "failed"
    assert item.error is not None
    assert "/endToEndId" in item.error


def test_unknown_kind_is_unsupported_not_failed(engine: Engine) -> None:
    with session_scope(engine) as session:
        stored = store_items(
            session, [NewItem(kind="crypto", key="crypto:1", payload="{}")], source=Source.WEBHOOK
        )
    report = process_items(engine, stored.new_ids)
    assert report.unsupported == stored.new_ids


def _store_many(engine: Engine, items: list[tuple[str, str, dict[str, object]]]) -> list[int]:
    with session_scope(engine) as session:
        result = store_items(
            session,
            [NewItem(kind=kind, key=key, payload=dump_json(body)) for kind, key, body in items],
            source=Source.WEBHOOK,
        )
    return result.new_ids


def _refund(e2e: str, status: str) -> dict[str, object]:
    return {
        "endToEndId": e2e,
        "devolucao": {
            "id": "D1",
            "rtrId": "D1823612020261122120000000001",
            "valor": "10.00",
            "status": status,
        },
    }


def test_a_batch_stores_every_pix_once_and_keeps_each_refunds_latest_fact(
    engine: Engine,
) -> None:
    bodies = [pix(txid=None) for _ in range(250)]
    e2e = str(bodies[0]["endToEndId"])
    items = [("pix", f"pix:{b['endToEndId']}", b) for b in bodies]
    # Two facts of one refund in one batch, the later one first: the settled one stays.
    items += [
        ("pix_refund", "refund:D1:DEVOLVIDO", _refund(e2e, "DEVOLVIDO")),
        ("pix_refund", "refund:D1:EM_PROCESSAMENTO", _refund(e2e, "EM_PROCESSAMENTO")),
        ("pix", "pix:broken", {"valor": "1.00"}),
    ]
    ids = _store_many(engine, items)
    report = process_items(engine, ids)
    assert len(report.processed) == 252
    assert len(report.failed) == 1
    with session_scope(engine) as session:
        rows = session.execute(select(col(PixReceived.end_to_end_id))).scalars().all()
        refunds = session.execute(select(PixRefund)).scalars().all()
        statuses = {i.status for i in session.execute(select(InboxItem)).scalars()}
    assert sorted(rows) == sorted(str(b["endToEndId"]) for b in bodies)
    assert [(r.status, r.amount_cents) for r in refunds] == [("DEVOLVIDO", 1000)]
    assert statuses == {"processed", "failed"}


def test_a_row_the_database_refuses_fails_its_item_alone(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The readers stop what a column cannot hold before it reaches the database; should a
    row get through anyway, its batch is done again item by item and only it fails."""
    real = pix_handlers.pix_row

    def row(item: InboxItem) -> dict[str, object]:
        made = real(item)
        return {**made, "end_to_end_id": None} if item.key == "pix:poison" else made

    monkeypatch.setattr(pix_handlers, "pix_row", row)
    batch = BATCH_HANDLERS["pix"]
    monkeypatch.setitem(BATCH_HANDLERS, "pix", BatchHandler(row, batch.write))
    good = [pix(txid=None) for _ in range(3)]
    items = [("pix", f"pix:{b['endToEndId']}", b) for b in good]
    ids = _store_many(engine, [*items, ("pix", "pix:poison", pix(txid=None))])
    report = process_items(engine, ids)
    assert report.failed == [ids[-1]]
    assert sorted(report.processed) == ids[:-1]
    with session_scope(engine) as session:
        stored = set(session.execute(select(col(PixReceived.end_to_end_id))).scalars())
        failed = session.get(InboxItem, ids[-1])
    assert stored == {str(b["endToEndId"]) for b in good}
    assert failed is not None
    assert failed.status == "failed"
    assert failed.error is not None
    assert failed.error.startswith("the database refused the item's row: ")


def test_a_batch_takes_exactly_the_items_it_was_given(engine: Engine) -> None:
    """Ids sent as one array parameter on PostgreSQL, an ``IN`` list on SQLite: either
    way only the batch's own items are processed, and an id named twice counts once."""
    ids = [_store(engine, pix(), key=f"pix:{n}") for n in range(1, 6)]
    batch = [ids[0], ids[2], ids[2], ids[4]]
    report = process_items(engine, batch)
    assert sorted(report.processed) == [ids[0], ids[2], ids[4]]
    with session_scope(engine) as session:
        statuses = dict(session.execute(select(col(InboxItem.id), col(InboxItem.status))).all())
    assert [statuses[i] for i in ids] == [
        "processed",
        "pending",
        "processed",
        "pending",
        "processed",
    ]


@pytest.mark.postgres
@pytest.mark.parametrize(
    "poison",
    [{"end_to_end_id": "E" * 40}, {"info_pagador": "pedido\x00"}, {"txid": "t" * 36}],
    ids=["too-long-key", "nul", "too-long-txid"],
)
def test_a_value_its_column_cannot_hold_fails_its_item_and_is_never_cut(
    postgres_database_url: str, monkeypatch: pytest.MonkeyPatch, poison: dict[str, object]
) -> None:
    """On PostgreSQL a batch's rows go as one JSON document: a value too long for its
    column must fail its item as a parameter would, never be cut to fit by a cast."""
    engine = create_db_engine(postgres_database_url)
    real = pix_handlers.pix_row

    def row(item: InboxItem) -> dict[str, object]:
        made = real(item)
        return {**made, **poison} if item.key == "pix:poison" else made

    batch = BATCH_HANDLERS["pix"]
    monkeypatch.setitem(BATCH_HANDLERS, "pix", BatchHandler(row, batch.write))
    monkeypatch.setattr(pix_handlers, "pix_row", row)
    good = [pix(txid=None) for _ in range(3)]
    items = [("pix", f"pix:{b['endToEndId']}", b) for b in good]
    ids = _store_many(engine, [*items, ("pix", "pix:poison", pix(txid=None))])
    report = process_items(engine, ids)
    assert report.failed == [ids[-1]]
    with session_scope(engine) as session:
        stored = set(session.execute(select(col(PixReceived.end_to_end_id))).scalars())
    assert stored == {str(b["endToEndId"]) for b in good}
    engine.dispose()
