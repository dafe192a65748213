from __future__ import annotations

from decimal import Decimal

import pytest
from sqlalchemy import Engine, select

from reconcile.db import session_scope
from reconcile.inbox import NewItem, dump_json, store_items
from reconcile.models import InboxItem, PixReceived, Source
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
