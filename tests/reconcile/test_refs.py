"""Every item is findable by any reference it carries — endToEndId, txid, rtrId, idRec,
idempotencyKey, the provider's id — through the ``inbox_ref`` index written with the item,
whether a webhook or a poll brought it; ``pixrecon events --ref`` lists the items and the
deliveries that carried them."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select, text
from sqlmodel import col

from migrations.apply import upgrade
from reconcile.db import create_db_engine, session_scope
from reconcile.inbox import Delivery, NewItem, dump_json, store_deliveries, store_items
from reconcile.models import DeliveryItem, InboxItem, InboxRef, Source
from reconcile.payloads.accounts import accounts_items
from reconcile.payloads.automatico import cobr_callback_items, rec_callback_items
from reconcile.payloads.pix import pix_callback_items
from reconcile.polling.qrcode import poll_charges, poll_received_pix
from reconcile.queries import deliveries_of, inbox_item_view, items_by_ref
from reconcile.timeutil import utcnow
from tests.cli_support import clean_env, run_pixrecon
from tests.factories import e2e_id, pix
from tests.receiver.deliveries import FIXTURES, accounts_sample

RECEIVE_E2E = "E18236120202611221601c0000000002"
ID_REC = "RR1234567820240115abcdefghijk"


def _fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def _deliver(engine: Engine, *deliveries: tuple[str, list[NewItem]]) -> None:
    """As the receiver's group commit stores them: several deliveries, one transaction."""
    with session_scope(engine) as session:
        store_deliveries(
            session,
            [
                Delivery(route, "10.0.0.1", {}, dump_json([i.key for i in items]).encode(), items)
                for route, items in deliveries
            ],
        )


def _found(engine: Engine, ref: str) -> set[str]:
    with session_scope(engine) as session:
        return {item.key for item in items_by_ref(session, ref)}


def test_items_are_found_by_every_reference_they_carry(engine: Engine) -> None:
    refund = {
        "id": "dev1",
        "rtrId": "D18236120202611221530r0000000001",
        "valor": "1.00",
        "status": "DEVOLVIDO",
    }
    paid = pix(e2e=e2e_id(1), txid="pedido42", devolucoes=refund)
    _deliver(
        engine,
        ("/webhooks/qrcode/pix", pix_callback_items({"pix": [paid]})),
        ("/webhooks/accounts", accounts_items(_fixture("accounts/receive.json"))),
        ("/webhooks/qrcode/cobr", cobr_callback_items(_fixture("qrcode/cobr_bcb_example.json"))),
        ("/webhooks/qrcode/rec", rec_callback_items(_fixture("qrcode/rec_bcb_example.json"))),
    )
    pix_key, refund_key = f"pix:{e2e_id(1)}", "refund:D18236120202611221530r0000000001:DEVOLVIDO"
    assert _found(engine, e2e_id(1)) == {pix_key, refund_key}
    assert _found(engine, "pedido42") == {pix_key}
    assert _found(engine, "D18236120202611221530r0000000001") == {pix_key, refund_key}
    assert _found(engine, "dev1") == {refund_key}
    # An accounts credit by its endToEndId, and a recurring charge by its recurrence.
    receive = "accounts:RECEIVE:rcv-000123:LIQUIDATED"
    assert _found(engine, RECEIVE_E2E) == {receive}
    assert _found(engine, "rcv-000123") == {receive}
    assert _found(engine, ID_REC) == {"cobr:3136957d93134f2184b369e8f1c0729d:ATIVA:1.SOLICITADA"}
    assert _found(engine, "E12345678202406201221abcdef12345") == _found(engine, ID_REC)
    assert _found(engine, "RR1026652320240821lab77511abf") == {
        "rec:RR1026652320240821lab77511abf:APROVADA:2024-08-22T12:43:53.337Z"
    }
    assert _found(engine, "nobody") == set()


def test_the_events_view_names_references_and_warnings(engine: Engine) -> None:
    body = accounts_sample("receive.json", "payload").body
    _deliver(engine, ("/webhooks/accounts", accounts_items(json.loads(json.dumps(body)))))
    with session_scope(engine) as session:
        (item,) = items_by_ref(session, RECEIVE_E2E)
        view = inbox_item_view(item)
    assert view["refs"] == {"id": ["rcv-000123"], "endToEndId": [RECEIVE_E2E], "txid": ["pedido45"]}
    assert view["warnings"] == [{"pointer": "/payload", "expected": "the notification under data"}]


def test_every_delivery_that_carried_an_item_is_listed(engine: Engine) -> None:
    first, other = pix(e2e=e2e_id(1)), pix(e2e=e2e_id(2))
    _deliver(engine, ("/webhooks/qrcode/pix", pix_callback_items({"pix": [first]})))
    # The same Pix again, alone and beside another: each delivery is a sighting of it.
    _deliver(
        engine,
        ("/webhooks/qrcode/pix", pix_callback_items(first)),
        ("/webhooks/qrcode", pix_callback_items([first, other, first])),
    )
    with session_scope(engine) as session:
        (item,) = items_by_ref(session, e2e_id(1))
        assert item.id is not None
        carried = deliveries_of(session, [item.id])[item.id]
        refs = session.execute(select(InboxRef).where(col(InboxRef.item_id) == item.id)).all()
        repeats = session.execute(select(DeliveryItem)).scalars().all()
    assert [d["route"] for d in carried] == ["/webhooks/qrcode/pix"] * 2 + ["/webhooks/qrcode"]
    # The delivery that brought it is the item's own; only repeats need a row.
    assert len(repeats) == 2
    assert carried[2]["item_count"] == 3
    assert item.webhook_count == 4
    # Written once, when the item was new.
    assert len(refs) == 2


class _Api:
    """The QR code API's lists, as the poller walks them."""

    def __init__(self, pix_list: list[dict[str, Any]]) -> None:
        self.pix_list = pix_list

    def list_received_pix(
        self, inicio: datetime, fim: datetime, page_size: int = 100
    ) -> Iterator[dict[str, Any]]:
        yield from self.pix_list

    def list_cobs(self, inicio: datetime, fim: datetime) -> Iterator[dict[str, Any]]:
        yield from ()

    def list_cobvs(self, inicio: datetime, fim: datetime) -> Iterator[dict[str, Any]]:
        yield from ()

    def list_cobrs(self, inicio: datetime, fim: datetime) -> Iterator[dict[str, Any]]:
        cobr = _fixture("qrcode/cobr_bcb_example.json")["cobsr"][0]
        yield {**cobr, "valor": {"original": "20.00"}, "calendario": {}}

    def list_recs(self, inicio: datetime, fim: datetime) -> Iterator[dict[str, Any]]:
        yield _fixture("qrcode/rec_bcb_example.json")["recs"][0]


def test_polled_items_get_references_too(engine: Engine) -> None:
    api = _Api([pix(e2e=e2e_id(7), txid="pollTx1"), pix(e2e=e2e_id(8), valor="sem valor")])
    now = utcnow()
    polled = poll_received_pix(api, engine, now, now)
    assert (len(polled.new_ids), polled.flagged) == (2, 1)
    poll_charges(api, engine, now, now)
    assert _found(engine, "pollTx1") == {f"pix:{e2e_id(7)}"}
    # Its amount unreadable, the polled Pix is stored all the same, flagged.
    assert _found(engine, e2e_id(8)) == {f"pix:{e2e_id(8)}"}
    assert _found(engine, ID_REC) == {
        "charge:cobr:3136957d93134f2184b369e8f1c0729d:ATIVA:0",
        "cobr:3136957d93134f2184b369e8f1c0729d:ATIVA:1.SOLICITADA",
    }
    with session_scope(engine) as session:
        (flagged,) = items_by_ref(session, e2e_id(8))
    assert flagged.source == Source.POLL.value
    assert json.loads(flagged.warnings or "[]")[0]["pointer"] == "/valor"


def test_items_built_without_references_take_them_from_their_payload(engine: Engine) -> None:
    payload = dump_json({"endToEndId": e2e_id(9), "txid": "fromPayload"})
    with session_scope(engine) as session:
        store_items(session, [NewItem("pix", f"pix:{e2e_id(9)}", payload)], source=Source.POLL)
    assert _found(engine, "fromPayload") == {f"pix:{e2e_id(9)}"}


def test_events_ref_lists_items_and_deliveries(sqlite_template: Path, tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    shutil.copy(sqlite_template, path)
    url = f"sqlite:///{path}"
    engine = create_db_engine(url)
    receive = _fixture("accounts/receive.json")
    _deliver(engine, ("/webhooks/accounts", accounts_items(receive)))
    _deliver(engine, ("/webhooks/accounts/receive", accounts_items(receive)))
    engine.dispose()
    env = clean_env(database_url=url)

    listed = run_pixrecon("events", "--ref", RECEIVE_E2E, "--format", "json", cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    (item,) = json.loads(listed.stdout)
    assert item["key"] == "accounts:RECEIVE:rcv-000123:LIQUIDATED"
    assert item["refs"]["endToEndId"] == [RECEIVE_E2E]
    assert item["warnings"] == []
    assert [d["route"] for d in item["deliveries"]] == [
        "/webhooks/accounts",
        "/webhooks/accounts/receive",
    ]

    wide = {**env, "COLUMNS": "240"}
    table = run_pixrecon("events", "--ref", "rcv-000123", cwd=tmp_path, env=wide)
    assert table.returncode == 0, table.stderr
    assert "accounts:RECEIVE:rcv-000123:LIQUIDATED" in table.stdout
    assert "/webhooks/accounts/receive" in table.stdout
    nothing = run_pixrecon("events", "--ref", "nobody", "--format", "json", cwd=tmp_path, env=env)
    assert json.loads(nothing.stdout) == []


def test_the_migration_indexes_items_stored_before_it(blank_url: str) -> None:
    engine = create_db_engine(blank_url)
    upgrade(engine, "0012")
    now = utcnow()
    receive = accounts_items(_fixture("accounts/receive.json"))[0]
    with engine.begin() as connection:
        delivery_id = connection.execute(
            text(
                "INSERT INTO webhook_delivery (route, headers, item_count, received_at, body) "
                "VALUES ('/webhooks/accounts', '{}', 1, :now, :body) RETURNING id"
            ),
            {"now": now, "body": b"{}"},
        ).scalar_one()
        connection.execute(
            text(
                "INSERT INTO inbox_item (source, kind, key, payload, status, delivery_id, "
                "received_at, last_seen_at, webhook_count, poll_count, attempts) VALUES "
                "('webhook', :kind, :key, :payload, 'processed', :delivery, :now, :now, 1, 0, 0)"
            ),
            {
                "kind": receive.kind,
                "key": receive.key,
                "payload": receive.payload,
                "delivery": delivery_id,
                "now": now,
            },
        )
    upgrade(engine)
    assert _found(engine, RECEIVE_E2E) == {receive.key}
    with session_scope(engine) as session:
        item = session.execute(select(InboxItem)).scalar_one()
        assert item.id is not None
        carried = deliveries_of(session, [item.id])[item.id]
    assert [d["id"] for d in carried] == [delivery_id]
    engine.dispose()
