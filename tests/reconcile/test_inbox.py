from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta

import pytest
from sqlalchemy import Engine, func, select
from sqlmodel import col

from reconcile.db import session_scope
from reconcile.inbox import (
    Delivery,
    NewItem,
    StoreResult,
    claim_for_redispatch,
    commit_deliveries,
    store_deliveries,
    store_items,
)
from reconcile.models import DeliveryItem, InboxItem, InboxRef, Source, WebhookDelivery
from reconcile.payloads.tolerant import ItemWarning
from reconcile.timeutil import utcnow
from tests.factories import e2e_id


def _item(key: str) -> NewItem:
    return NewItem(kind="pix", key=key, payload=json.dumps({"key": key}), refs=(f"ref-{key}",))


def test_new_items_are_inserted_once_and_repeats_counted(engine: Engine) -> None:
    with session_scope(engine) as session:
        first = store_items(session, [_item("pix:a"), _item("pix:b")], source=Source.WEBHOOK)
    assert len(first.new_ids) == 2
    assert first.duplicates == 0
    with session_scope(engine) as session:
        again = store_items(session, [_item("pix:a"), _item("pix:c")], source=Source.WEBHOOK)
    assert again.duplicates == 1
    assert len(again.new_ids) == 1
    with session_scope(engine) as session:
        rows = {i.key: i for i in session.execute(select(InboxItem)).scalars()}
    assert set(rows) == {"pix:a", "pix:b", "pix:c"}
    assert rows["pix:a"].webhook_count == 2
    assert rows["pix:a"].duplicates == 1
    assert rows["pix:c"].id in again.new_ids


def test_repeats_inside_one_batch_are_duplicates(engine: Engine) -> None:
    with session_scope(engine) as session:
        result = store_items(
            session, [_item("pix:x"), _item("pix:x"), _item("pix:x")], source=Source.WEBHOOK
        )
    assert len(result.new_ids) == 1
    assert result.duplicates == 2
    with session_scope(engine) as session:
        item = session.execute(select(InboxItem)).scalar_one()
    assert item.webhook_count == 3


def test_poll_sighting_of_a_webhook_item_is_not_a_duplicate_delivery(engine: Engine) -> None:
    key = f"pix:{e2e_id()}"
    with session_scope(engine) as session:
        store_items(session, [_item(key)], source=Source.WEBHOOK)
    with session_scope(engine) as session:
        polled = store_items(session, [_item(key)], source=Source.POLL)
    assert polled.new_ids == []
    with session_scope(engine) as session:
        item = session.execute(select(InboxItem)).scalar_one()
    assert item.source == "webhook"
    assert (item.webhook_count, item.poll_count, item.duplicates) == (1, 1, 0)
    assert item.webhook_at is not None
    assert item.poll_at is not None


def test_item_found_by_polling_first_keeps_source_poll(engine: Engine) -> None:
    with session_scope(engine) as session:
        polled = store_items(session, [_item("pix:p")], source=Source.POLL)
        late = store_items(session, [_item("pix:p")], source=Source.WEBHOOK)
    assert len(polled.new_ids) == 1
    assert late.new_ids == []
    with session_scope(engine) as session:
        item = session.execute(select(InboxItem)).scalar_one()
    assert item.source == "poll"
    assert item.webhook_count == 1


def test_claim_for_redispatch_takes_only_stale_pending_items(engine: Engine) -> None:
    with session_scope(engine) as session:
        stored = store_items(session, [_item("pix:1"), _item("pix:2")], source=Source.WEBHOOK)
    now = utcnow()
    with session_scope(engine) as session:
        assert claim_for_redispatch(session, older_than=now - timedelta(seconds=60), limit=10) == []
    with session_scope(engine) as session:
        claimed = claim_for_redispatch(session, older_than=now + timedelta(seconds=1), limit=10)
    assert claimed == sorted(stored.new_ids)
    # Just stamped: not claimed again until redispatch_after has passed once more.
    with session_scope(engine) as session:
        assert claim_for_redispatch(session, older_than=now, limit=10) == []
        count = session.execute(
            select(func.count()).where(InboxItem.dispatched_at.is_not(None))  # type: ignore[union-attr]
        ).scalar_one()
    assert count == 2


def _delivery(*keys: str) -> Delivery:
    return Delivery(
        route="/webhooks/qrcode/pix",
        remote_addr="10.0.0.1",
        headers={"content-type": "application/json"},
        body=json.dumps(keys).encode(),
        items=[_item(key) for key in keys],
    )


def _in_session(engine: Engine, deliveries: list[Delivery]) -> list[StoreResult]:
    with session_scope(engine) as session:
        return store_deliveries(session, deliveries)


@pytest.mark.parametrize("store", [_in_session, commit_deliveries], ids=["session", "commit"])
def test_deliveries_stored_together_get_the_results_they_would_get_alone(
    engine: Engine, store: Callable[[Engine, list[Delivery]], list[StoreResult]]
) -> None:
    (known,) = store(engine, [_delivery("pix:known")])
    batch = [
        _delivery("pix:b", "pix:a"),
        _delivery("pix:a", "pix:known"),  # one repeat from this batch, one from before
        _delivery("pix:c", "pix:c"),
        _delivery(),
    ]
    first, second, third, empty = store(engine, batch)

    with session_scope(engine) as session:
        rows = {i.key: i for i in session.execute(select(InboxItem)).scalars()}
        deliveries = session.execute(
            select(WebhookDelivery).order_by(col(WebhookDelivery.id))
        ).all()
    assert [d.item_count for (d,) in deliveries] == [1, 2, 2, 2, 0]
    assert deliveries[1][0].body == json.dumps(["pix:b", "pix:a"]).encode()
    assert sorted(first.new_ids) == sorted([rows["pix:a"].id, rows["pix:b"].id])
    assert first.duplicates == 0
    assert second.new_ids == []
    assert second.duplicates == 2
    assert second.item_ids == [rows["pix:a"].id, rows["pix:known"].id]
    assert third.new_ids == [rows["pix:c"].id]
    assert third.duplicates == 1
    assert empty.item_ids == empty.new_ids == []
    assert empty.duplicates == 0
    assert known.new_ids == [rows["pix:known"].id]
    # Each item belongs to the first delivery that carried it; every sighting is counted.
    assert rows["pix:a"].delivery_id == deliveries[1][0].id
    assert rows["pix:a"].webhook_count == 2
    assert rows["pix:c"].webhook_count == 2
    assert rows["pix:known"].webhook_count == 2
    # Every other delivery that carried an item is linked to it (a repeat within the
    # delivery that created it is not another delivery); references are an item's own,
    # written once, when it is created.
    with session_scope(engine) as session:
        links = set(
            session.execute(select(col(DeliveryItem.item_id), col(DeliveryItem.delivery_id)))
        )
        refs = set(session.execute(select(col(InboxRef.ref), col(InboxRef.item_id))))
    second_id = deliveries[2][0].id
    assert links == {(rows["pix:a"].id, second_id), (rows["pix:known"].id, second_id)}
    assert refs == {(f"ref-{key}", row.id) for key, row in rows.items()}


def test_every_byte_and_character_is_stored_as_it_came(engine: Engine) -> None:
    """The group commit's rows travel as JSON on PostgreSQL: quotes, backslashes, escapes,
    line separators, accents and emoji in any text, and every byte of a body, come back
    exactly."""
    texts = 'aspas " barra \\ \\u0041 \n\t \u2028 \u00e7\u00e3o \U0001f600 \x7f'
    body = bytes(range(256)) + texts.encode()
    item = NewItem(
        kind="pix",
        key=f"pix:{e2e_id(1)}",
        payload=json.dumps({"infoPagador": texts}, ensure_ascii=False),
        warnings=(ItemWarning("/infoPagador", texts),),
        refs=(e2e_id(1), texts),
    )
    delivery = Delivery(
        route="/webhooks/qrcode/pix",
        remote_addr="2001:db8::1",
        headers={"user-agent": 'Jos\u00e9 "agent" \\ \u00ff'},
        body=body,
        items=[item],
    )
    with session_scope(engine) as session:
        (stored,) = store_deliveries(session, [delivery])
    with session_scope(engine) as session:
        (kept,) = session.execute(select(WebhookDelivery)).scalars()
        (row,) = session.execute(select(InboxItem)).scalars()
        refs = set(session.execute(select(col(InboxRef.ref))).scalars())
    assert (kept.body, kept.remote_addr) == (body, "2001:db8::1")
    assert json.loads(kept.headers) == dict(delivery.headers)
    assert (row.id, row.payload, row.key) == (stored.new_ids[0], item.payload, item.key)
    assert json.loads(row.warnings or "") == [{"pointer": "/infoPagador", "expected": texts}]
    assert refs == {e2e_id(1), texts}
