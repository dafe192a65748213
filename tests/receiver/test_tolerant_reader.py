"""The receiver as a tolerant reader (docs/design.md §4): an authenticated delivery of valid
JSON is refused only when an item has no business key. Everything else is stored with its
raw body, flagged on the item, counted in ``/metrics``, and processed without failing —
on SQLite and PostgreSQL. In process (httpx's ASGI transport), so the properties stay fast.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, func, select
from sqlmodel import col

from receiver.app import create_app
from reconcile.confirmation import confirm_pending_pix, waive_confirmation
from reconcile.db import create_db_engine, session_scope
from reconcile.models import (
    AccountMovement,
    InboxItem,
    InboxRef,
    PixReceived,
    PixRefund,
    WebhookDelivery,
)
from reconcile.payloads.refs import item_refs
from reconcile.processing import process_items
from reconcile.timeutil import as_utc
from tests.conftest import SECRET, make_settings
from tests.factories import e2e_id, pix
from tests.receiver.deliveries import (
    Sample,
    accounts_sample,
    dumps,
    json_values,
    keyless,
    mutated,
    samples,
)

PROPERTY = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


class InProcess:
    """The receiver app over httpx's ASGI transport, its event loop in a portal thread (as
    a server's would be), so that tests stay synchronous."""

    def __init__(self, portal: BlockingPortal, http: httpx.AsyncClient) -> None:
        self._portal = portal
        self._http = http

    def post(self, route: str, **kwargs: Any) -> httpx.Response:
        return self._portal.call(partial(self._http.post, route, **kwargs))

    def get(self, route: str) -> httpx.Response:
        return self._portal.call(self._http.get, route)


@contextmanager
def receiver(engine: Engine) -> Iterator[InProcess]:
    url = engine.url.render_as_string(hide_password=False)
    app = create_app(make_settings(url), engine)
    http = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://receiver",
        headers={"X-Webhook-Secret": SECRET},
    )
    # The lifespan's end finishes the last transaction and stops the writer thread.
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(app.router.lifespan_context(app)),
    ):
        yield InProcess(portal, http)
        portal.call(http.aclose)


@pytest.fixture
def client(engine: Engine) -> Iterator[InProcess]:
    with receiver(engine) as client:
        yield client


@pytest.fixture
def sqlite_engine(sqlite_template: Path, tmp_path: Path) -> Iterator[Engine]:
    """SQLite alone: what does not depend on the database needs one run, not two."""
    path = tmp_path / "tolerant.db"
    shutil.copy(sqlite_template, path)
    engine = create_db_engine(f"sqlite:///{path}")
    yield engine
    engine.dispose()


def _post(client: InProcess, route: str, body: bytes) -> httpx.Response:
    return client.post(route, content=body, headers={"content-type": "application/json"})


def _counts(engine: Engine) -> tuple[int, ...]:
    with session_scope(engine) as session:
        return tuple(
            int(session.execute(select(func.count()).select_from(model)).scalar_one())
            for model in (WebhookDelivery, InboxItem, InboxRef)
        )


def _process_pending(engine: Engine) -> list[str]:
    """Run the handlers on whatever is pending; the errors of items that failed."""
    with session_scope(engine) as session:
        pending = list(
            session.execute(
                select(col(InboxItem.id)).where(col(InboxItem.status) == "pending")
            ).scalars()
        )
    report = process_items(engine, pending)
    with session_scope(engine) as session:
        return [
            f"{item.kind}: {item.error}"
            for item in session.execute(
                select(InboxItem).where(col(InboxItem.id).in_(report.failed))
            ).scalars()
        ]


def _items(engine: Engine) -> dict[str, InboxItem]:
    with session_scope(engine) as session:
        return {i.key: i for i in session.execute(select(InboxItem)).scalars()}


def test_deliveries_as_real_senders_shape_them_are_accepted_flagged_and_processed(
    engine: Engine, client: InProcess
) -> None:
    odd_pix = pix(e2e=e2e_id(1), valor={"original": "110.00"}, horario="22/11/2026 15:00")
    odd_pix["devolucoes"] = {"id": "d1", "valor": "5.00", "status": "ESTORNADO"}
    refund = accounts_sample("refund.json", "data").body
    refund["data"]["refunds"][0]["pixRefundAmount"] = {"value": "12.00"}
    deliveries = [
        ("/webhooks/qrcode/pix", {"pix": [odd_pix]}),
        ("/webhooks/accounts", accounts_sample("receive.json", "payload").body),
        ("/webhooks/accounts", accounts_sample("transfer.json", "list").body),
        ("/webhooks/accounts", refund),
        ("/webhooks/accounts/cashout", {"data": {"idempotencyKey": "p-1", "status": 3}}),
    ]
    for route, body in deliveries:
        response = client.post(route, json=json.loads(dumps(body)))
        assert response.status_code == 200, response.text
    items = _items(engine)
    flagged = {key: json.loads(item.warnings or "[]") for key, item in items.items()}
    assert flagged[f"pix:{e2e_id(1)}"] == [
        {"pointer": "/valor", "expected": flagged[f"pix:{e2e_id(1)}"][0]["expected"]},
        {"pointer": "/horario", "expected": "an RFC 3339 date-time"},
    ]
    assert [w["pointer"] for w in flagged[f"refund:{e2e_id(1)}:d1:ESTORNADO"]] == [
        "/devolucao/status"
    ]
    assert [w["pointer"] for w in flagged["accounts:RECEIVE:rcv-000123:LIQUIDATED"]] == ["/payload"]
    assert [w["pointer"] for w in flagged["accounts:TRANSFER:98765:LIQUIDATED"]] == ["/data"]
    assert [w["pointer"] for w in flagged["accounts:REFUND:rcv-000123:PARTIALLY_REFUNDED:r1"]] == [
        "/data/refunds/0/pixRefundAmount"
    ]
    assert [w["pointer"] for w in flagged["accounts:CASHOUT:p-1:UNKNOWN"]] == ["/data/status"]

    # The provider's retry of a delivery brings no new warning: it counts once.
    route, body = deliveries[0]
    assert client.post(route, json=json.loads(dumps(body))).json()["duplicates"] >= 1
    metrics = client.get("/metrics").text
    assert 'pixrecon_item_warnings_total{field="/valor",kind="pix"} 1.0' in metrics
    assert 'pixrecon_item_warnings_total{field="/payload",kind="accounts.receive"} 1.0' in (metrics)

    assert _process_pending(engine) == []
    with session_scope(engine) as session:
        received = session.execute(select(PixReceived)).scalar_one()
        (refunded,) = session.execute(select(PixRefund)).scalars()
        movements = {
            (m.type, m.reference): m for m in session.execute(select(AccountMovement)).scalars()
        }
    # Its amount unread, the Pix counts no money until the API states one.
    assert (received.amount_cents, received.confirmation) == (None, "pending")
    assert received.horario is None
    assert received.horario_raw == "22/11/2026 15:00"
    assert (refunded.status, refunded.amount_cents) == ("ESTORNADO", 500)
    assert movements[("RECEIVE", "rcv-000123")].amount_cents == 4200
    assert movements[("REFUND", "rcv-000123")].refunded_cents == 0
    assert movements[("CASHOUT", "p-1")].status == "UNKNOWN"


class _PixApi:
    def __init__(self, valor: object) -> None:
        self.valor = valor

    def get_pix(self, e2eid: str) -> dict[str, Any]:
        return {"endToEndId": e2eid, "valor": self.valor}


def test_a_pix_of_unreadable_amount_takes_the_apis_at_confirmation(
    engine: Engine, client: InProcess
) -> None:
    for n in (1, 2):
        client.post("/webhooks/qrcode/pix", json=pix(e2e=e2e_id(n), valor="cento e dez"))
    assert _process_pending(engine) == []
    grace = timedelta(minutes=15)

    # Policy "none" trusts notifications, but there is no notified amount to trust.
    waive_confirmation(engine)
    unreadable = confirm_pending_pix(engine, _PixApi("R$ 110"), grace=grace)
    assert len(unreadable.still_pending) == 2
    with session_scope(engine) as session:
        rows = list(session.execute(select(PixReceived)).scalars())
    assert {(r.amount_cents, r.confirmation) for r in rows} == {(None, "pending")}

    with session_scope(engine) as session:
        for row in session.execute(select(PixReceived)).scalars():
            row.next_check_at = row.created_at
    confirmed = confirm_pending_pix(engine, _PixApi("110.00"), grace=grace)
    assert len(confirmed.confirmed) == 2
    with session_scope(engine) as session:
        rows = list(session.execute(select(PixReceived)).scalars())
    assert {(r.amount_cents, r.confirmed_amount_cents, r.confirmation) for r in rows} == {
        (11000, 11000, "confirmed")
    }


def test_bytes_that_are_not_text_in_their_encoding_are_malformed(
    engine: Engine, client: InProcess
) -> None:
    # A lone surrogate written as a JSON escape is text JSON allows, and is mended
    # (test_text_and_keys.py); encoded as UTF-16 bytes, the encoding JSON's first bytes
    # tell, it decodes to no text at all.
    text = json.dumps({"pix": [{"endToEndId": e2e_id(1), "infoPagador": "\ud800"}]})
    body = text.replace("\\ud800", "\ud800").encode("utf-16-le", "surrogatepass")
    response = client.post(
        "/webhooks/qrcode/pix", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["type"].endswith("malformed-json")
    assert _counts(engine) == (0, 0, 0)


def test_bytes_that_are_not_utf_8_though_declared_so_are_read_as_iso_8859_1(
    engine: Engine, client: InProcess
) -> None:
    # The key is ASCII whatever the rest: refused, the delivery would be retried as it
    # is until the provider disabled the webhook. The body is kept as it came.
    text = json.dumps({"pix": [pix(e2e=e2e_id(1), infoPagador="\ud800")]})
    body = text.replace("\\ud800", "\ud800").encode("utf-8", "surrogatepass")
    response = client.post(
        "/webhooks/qrcode/pix",
        content=body,
        headers={"content-type": "application/json; charset=utf-8"},
    )
    assert response.status_code == 200, response.text
    assert f"pix:{e2e_id(1)}" in _items(engine)


def test_text_no_column_can_hold_is_flagged_not_fatal(engine: Engine, client: InProcess) -> None:
    body = pix(e2e=e2e_id(1), infoPagador="a\x00b", pagador={"nome": "x\x00"})
    assert client.post("/webhooks/qrcode/pix", json=body).status_code == 200
    (item,) = _items(engine).values()
    assert [w["pointer"] for w in json.loads(item.warnings or "[]")] == [
        "/infoPagador",
        "/pagador/nome",
    ]
    assert _process_pending(engine) == []


def _accepted(engine: Engine, client: InProcess, examples: int) -> None:
    @settings(PROPERTY, max_examples=examples)
    @given(st.data())
    def check(data: st.DataObject) -> None:
        sample, done = data.draw(samples().flatmap(mutated))
        body = dumps(sample.body)
        response = _post(client, sample.route, body)
        assert response.status_code == 200, (done, response.text)
        assert response.json()["items"] >= 1
        with session_scope(engine) as session:
            stored = session.execute(
                select(WebhookDelivery).order_by(col(WebhookDelivery.id).desc()).limit(1)
            ).scalar_one()
        assert stored.body == body
        assert _process_pending(engine) == [], done

    check()


def test_any_change_that_keeps_the_keys_is_accepted_kept_and_processed(
    engine: Engine, client: InProcess
) -> None:
    # PostgreSQL checks what SQLite lets through (lengths, NUL characters): both run.
    _accepted(engine, client, 40 if engine.dialect.name == "sqlite" else 25)


@settings(PROPERTY, max_examples=40)
@given(data=st.data())
def test_a_delivery_with_an_item_without_its_key_is_refused_and_changes_nothing(
    sqlite_engine: Engine, data: st.DataObject
) -> None:
    sample: Sample = data.draw(samples().flatmap(keyless))
    with receiver(sqlite_engine) as client:
        before = _counts(sqlite_engine)
        response = _post(client, sample.route, dumps(sample.body))
    assert response.status_code == 400, response.text
    assert response.json()["violations"]
    assert _counts(sqlite_engine) == before


ROUTES = st.sampled_from(
    [
        "/webhooks/qrcode/pix",
        "/webhooks/qrcode",
        "/webhooks/qrcode/rec",
        "/webhooks/qrcode/cobr",
        "/webhooks/accounts",
        "/webhooks/accounts/transfer",
        "/webhooks/accounts/infraction",
        "/webhooks/accounts/whatever",
    ]
)
BODIES = st.one_of(
    json_values.map(dumps),
    samples().flatmap(mutated).map(lambda found: dumps(found[0].body)),
    st.binary(max_size=200),
)


@settings(PROPERTY, max_examples=60)
@given(route=ROUTES, body=BODIES)
def test_no_input_gives_a_5xx(sqlite_engine: Engine, route: str, body: bytes) -> None:
    with receiver(sqlite_engine) as client:
        response = _post(client, route, body)
    assert response.status_code in (200, 400), response.text
    assert _process_pending(sqlite_engine) == []


def test_amounts_in_any_exact_notation_reach_the_tables(engine: Engine, client: InProcess) -> None:
    text = (
        '{"pix": [{"endToEndId": "E1", "valor": 1e2, "horario": "2026-11-22T15:00:00-03:00",'
        ' "devolucoes": {"id": "d1", "valor": 3.000, "status": "DEVOLVIDO"}},'
        ' {"endToEndId": "E2", "valor": 110.000, "horario": "2026-11-22T15:00:00-03:00"}]}'
    )
    body = text.replace('"E1"', f'"{e2e_id(1)}"').replace('"E2"', f'"{e2e_id(2)}"').encode()
    assert _post(client, "/webhooks/qrcode/pix", body).status_code == 200
    receive = accounts_sample("receive.json", "data").body
    accounts_body = dumps(receive).replace(b'"42.00"', b"1.5E+2")
    assert _post(client, "/webhooks/accounts", accounts_body).status_code == 200
    assert all(item.warnings in (None, "[]") for item in _items(engine).values())

    assert _process_pending(engine) == []
    with session_scope(engine) as session:
        received = {
            r.end_to_end_id: r.amount_cents for r in session.execute(select(PixReceived)).scalars()
        }
        refunded = session.execute(select(PixRefund)).scalar_one()
        movement = session.execute(select(AccountMovement)).scalar_one()
        stored = (
            session.execute(select(WebhookDelivery).order_by(col(WebhookDelivery.id)))
            .scalars()
            .first()
        )
    assert received == {e2e_id(1): 10000, e2e_id(2): 11000}
    assert refunded.amount_cents == 300
    assert movement.amount_cents == 15000
    assert stored is not None
    assert stored.body == body


QR_ROUTES = [
    "/webhooks/qrcode/pix",
    "/webhooks/qrcode",
    "/webhooks/qrcode/rec",
    "/webhooks/qrcode/cobr",
]


def test_pings_and_bodies_of_other_shapes_are_kept_and_answered_200(
    sqlite_engine: Engine,
) -> None:
    bodies: list[Any] = [
        {"evento": "teste_webhook"},
        {"test": True},
        {"ping": "pong"},
        {"Pix": [pix(e2e=e2e_id(1))]},
        [[pix(e2e=e2e_id(1))]],
        {"cobr": [{"txid": "abc", "status": "ATIVA"}]},
    ]
    with receiver(sqlite_engine) as client:
        for route in QR_ROUTES:
            for body in bodies:
                response = client.post(route, json=body)
                assert response.status_code == 200, (route, body, response.text)
                assert response.json()["items"] == 1
        enveloped = client.post(
            "/webhooks/qrcode/pix", json={"data": {"pix": [pix(e2e=e2e_id(2))]}}
        )
        assert enveloped.json() == {"items": 1, "new": 1, "duplicates": 0}
        refused = client.post("/webhooks/qrcode/pix", json={"pix": [{"endToEndId": None}]})
        assert refused.status_code == 400
    items = _items(sqlite_engine)
    assert {i.status for k, i in items.items() if k.startswith("unsupported:")} == {"unsupported"}
    assert json.loads(items[f"pix:{e2e_id(2)}"].warnings or "[]") == [
        {"pointer": "/data", "expected": '{"pix": [...]} itself, not under data'}
    ]
    assert _process_pending(sqlite_engine) == []


@pytest.mark.parametrize(
    "content_type", [None, "application/json", "text/plain", "application/x-www-form-urlencoded"]
)
def test_an_empty_body_is_kept_like_an_empty_object(
    sqlite_engine: Engine, content_type: str | None
) -> None:
    headers = {"content-type": content_type} if content_type else {}
    with receiver(sqlite_engine) as client:
        for route in [*QR_ROUTES, "/webhooks/accounts"]:
            response = client.post(route, content=b"", headers=headers)
            assert response.status_code == 200, (route, response.text)
            assert response.json()["items"] == 1
        anonymous = client.post(
            "/webhooks/qrcode/pix", content=b"", headers={**headers, "X-Webhook-Secret": "wrong"}
        )
        assert anonymous.status_code == 401
    items = _items(sqlite_engine).values()
    assert {(i.kind, i.status, i.payload) for i in items} == {("unsupported", "unsupported", "{}")}
    with session_scope(sqlite_engine) as session:
        bodies = set(session.execute(select(col(WebhookDelivery.body))).scalars())
    assert bodies == {b""}


def test_refunds_without_their_key_of_different_pix_stay_apart(sqlite_engine: Engine) -> None:
    refund = {"valor": "2.00", "status": "DEVOLVIDO"}
    answers = []
    with receiver(sqlite_engine) as client:
        for n in (1, 2, 2):
            body = {"pix": [pix(e2e=e2e_id(n), devolucoes=[refund])]}
            answers.append(client.post("/webhooks/qrcode/pix", json=body).json())
    assert answers == [
        {"items": 2, "new": 2, "duplicates": 0},
        {"items": 2, "new": 2, "duplicates": 0},
        {"items": 2, "new": 0, "duplicates": 2},
    ]
    with session_scope(sqlite_engine) as session:
        kept = {
            json.loads(item.payload)["endToEndId"]: item.id
            for item in session.execute(
                select(InboxItem).where(col(InboxItem.kind) == "unsupported")
            ).scalars()
        }
        refs = {(r.ref, r.item_id) for r in session.execute(select(InboxRef)).scalars()}
    assert set(kept) == {e2e_id(1), e2e_id(2)}
    assert {(e2e, item_id) for e2e, item_id in kept.items()} <= refs


def test_a_time_without_its_offset_is_stored_as_sao_paulo_time(
    engine: Engine, client: InProcess
) -> None:
    for n, written in ((1, "2026-11-26T21:30:00"), (2, "2026-11-26")):
        body = pix(e2e=e2e_id(n), horario=written)
        assert client.post("/webhooks/qrcode/pix", json=body).status_code == 200
    flagged = {k: json.loads(i.warnings or "[]") for k, i in _items(engine).items()}
    assert {k: [w["pointer"] for w in found] for k, found in flagged.items()} == {
        f"pix:{e2e_id(1)}": ["/horario"],
        f"pix:{e2e_id(2)}": ["/horario"],
    }
    assert _process_pending(engine) == []
    with session_scope(engine) as session:
        stored = {
            r.end_to_end_id: as_utc(r.horario)
            for r in session.execute(select(PixReceived)).scalars()
            if r.horario is not None
        }
    # 21:30 in São Paulo is still the 26th there, though the 27th in UTC.
    assert stored == {
        e2e_id(1): datetime(2026, 11, 27, 0, 30, tzinfo=UTC),
        e2e_id(2): datetime(2026, 11, 26, 3, tzinfo=UTC),
    }


def test_a_status_in_lower_case_is_read_as_the_documented_one(sqlite_engine: Engine) -> None:
    """``devolvido`` can mean only DEVOLVIDO: kept as written it would rank as no known
    status, and a later ``DEVOLVIDO`` of the same refund would be a second item."""
    refund = {"id": "D1", "valor": "2.00", "status": " devolvido"}
    body = {"pix": [pix(e2e=e2e_id(1), devolucoes=[refund])]}
    with receiver(sqlite_engine) as client:
        first = client.post("/webhooks/qrcode/pix", json=body).json()
        refund["status"] = "DEVOLVIDO"
        again = client.post("/webhooks/qrcode/pix", json=body).json()
    assert (first["new"], again["new"], again["duplicates"]) == (2, 0, 2)
    items = _items(sqlite_engine)
    kept = items[f"refund:{e2e_id(1)}:D1:DEVOLVIDO"]
    # The payload as it came; the field flagged with what it was read as.
    assert json.loads(kept.payload)["devolucao"]["status"] == " devolvido"
    assert json.loads(kept.warnings or "[]") == [
        {
            "pointer": "/devolucao/status",
            "expected": "one of EM_PROCESSAMENTO, DEVOLVIDO, NAO_REALIZADO (read as DEVOLVIDO)",
        }
    ]
    assert process_items(sqlite_engine, [i.id for i in items.values() if i.id]).failed == []
    with session_scope(sqlite_engine) as session:
        status = session.execute(select(col(PixRefund.status))).scalar_one()
    assert status == "DEVOLVIDO"


def _strict_json(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(
    "valor",
    ["NaN", "Infinity", "-Infinity", "9" * 5_000],
    ids=["nan", "infinity", "minus-infinity", "5000-digits"],
)
def test_numbers_python_reads_apart_from_json_are_unreadable_amounts_not_refusals(
    sqlite_engine: Engine, valor: str
) -> None:
    """Python's parser reads NaN and Infinity, which JSON has not, and refuses integers of
    more than 4,300 digits, which JSON allows: a Pix with its key and such an amount is
    kept, flagged and stored as JSON any reader parses."""
    e2e = e2e_id(7)
    body = (
        '{"pix": [{"endToEndId": "' + e2e + '", "horario": "2026-11-20T10:00:00-03:00", '
        '"valor": ' + valor + "}]}"
    )
    with receiver(sqlite_engine) as client:
        response = client.post(
            "/webhooks/qrcode/pix", content=body, headers={"content-type": "application/json"}
        )
    assert response.status_code == 200, response.text
    item = _items(sqlite_engine)[f"pix:{e2e}"]
    assert [w["pointer"] for w in json.loads(item.warnings or "[]")] == ["/valor"]
    assert _strict_json(item.payload)["endToEndId"] == e2e
    assert _process_pending(sqlite_engine) == []
    with session_scope(sqlite_engine) as session:
        received = session.execute(select(PixReceived)).scalar_one()
    assert received.amount_cents is None


@pytest.mark.parametrize(
    "name", ["endtoendid", "EndToEndID", "end_to_end_id", " endToEndId ", "end to end id"]
)
def test_a_key_under_another_spelling_of_its_name_is_read_and_flagged(
    sqlite_engine: Engine, name: str
) -> None:
    """The key is as readable under ``endtoendid`` as under ``endToEndId``: refusing the
    delivery would count towards the provider disabling the webhook."""
    e2e = e2e_id(8)
    body = {"pix": [{name: e2e, "valor": "10.00", "horario": "2026-11-20T10:00:00-03:00"}]}
    with receiver(sqlite_engine) as client:
        response = client.post("/webhooks/qrcode/pix", json=body)
    assert response.status_code == 200, response.text
    item = _items(sqlite_engine)[f"pix:{e2e}"]
    assert json.loads(item.warnings or "[]") == [
        {
            "pointer": "/" + name,
            "expected": "the business key under its documented name, endToEndId (read from "
            "this one)",
        }
    ]
    assert json.loads(item.payload)[name] == e2e, "the payload is kept as it came"
    # ``pixrecon events --ref`` finds it by its key, whatever the spelling it came under.
    assert item_refs(item.kind, json.loads(item.payload)) == {"endToEndId": [e2e]}
    assert _process_pending(sqlite_engine) == []
    with session_scope(sqlite_engine) as session:
        received = session.execute(select(PixReceived)).scalar_one()
    assert (received.end_to_end_id, received.amount_cents) == (e2e, 1000)


MONTHLY = {"dataInicial": "2026-03-02", "periodicidade": "MENSAL"}
AMOUNT = {"valorRec": "35.00"}


@pytest.mark.parametrize(
    ("calendario", "valor", "flagged"),
    [
        (MONTHLY, AMOUNT, []),
        ({**MONTHLY, "dataInicial": "2026-02-30"}, AMOUNT, ["/calendario"]),
        ({**MONTHLY, "dataFinal": "never"}, AMOUNT, ["/calendario"]),
        ({**MONTHLY, "periodicidade": "QUINZENAL"}, None, ["/calendario"]),
        ("mensal", {"valorRec": "abc"}, ["/calendario", "/valor"]),
        (None, "35.00", ["/valor"]),
    ],
    ids=["readable", "no-such-date", "unreadable-end", "unknown-periodicity", "both", "bare"],
)
def test_a_recurrence_calendar_or_amount_that_cannot_be_read_is_flagged(
    sqlite_engine: Engine, calendario: Any, valor: Any, flagged: list[str]
) -> None:
    """They decide which cycles of a recurrence are due: left out silently, a missed
    cycle would go unnoticed with nothing to say why."""
    rec: dict[str, Any] = {"idRec": "RR1234567820261127000000000x01", "status": "APROVADA"}
    rec["atualizacao"] = [{"status": "APROVADA", "data": "2026-03-02T10:00:00-03:00"}]
    if calendario is not None:
        rec["calendario"] = calendario
    if valor is not None:
        rec["valor"] = valor
    with receiver(sqlite_engine) as client:
        response = client.post("/webhooks/qrcode/rec", json={"recs": [rec]})
    assert response.status_code == 200, response.text
    (item,) = _items(sqlite_engine).values()
    assert [w["pointer"] for w in json.loads(item.warnings or "[]")] == flagged
    assert _process_pending(sqlite_engine) == []


@pytest.mark.parametrize(
    ("components", "flagged"),
    [
        ({"original": {"valor": "100.00"}, "juros": {"valor": "2.50"}}, []),
        ({"original": "x", "juros": {"valor": "abc"}}, ["/componentesValor"]),
        ({"original": {"valor": "100.00"}, "desconto": {"valor": "dez"}}, ["/componentesValor"]),
        ("100.00", ["/componentesValor"]),
    ],
    ids=["readable", "original-not-an-object", "unreadable-part", "not-an-object"],
)
def test_a_breakdown_of_the_amount_that_cannot_be_read_is_flagged(
    sqlite_engine: Engine, components: Any, flagged: list[str]
) -> None:
    """A due-date charge is judged on the Pix's componentesValor: one that cannot be read
    is kept as it came and flagged, not passed over in silence."""
    e2e = e2e_id(9)
    body = {"pix": [pix(e2e=e2e, valor="102.50", componentesValor=components)]}
    with receiver(sqlite_engine) as client:
        response = client.post("/webhooks/qrcode/pix", json=body)
    assert response.status_code == 200, response.text
    item = _items(sqlite_engine)[f"pix:{e2e}"]
    assert [w["pointer"] for w in json.loads(item.warnings or "[]")] == flagged
    assert _process_pending(sqlite_engine) == []


@pytest.mark.parametrize("body", [b'{"pix": [', b'{"pix": [ '], ids=["odd", "even"])
def test_a_body_refused_in_its_declared_charset_says_which_charset(
    sqlite_engine: Engine, body: bytes
) -> None:
    """Broken UTF-8 JSON sent as ``charset=utf-16``: JSON neither in the declared charset
    nor as JSON tells its own, and the operator must learn the body was read in the
    declared charset first."""
    with receiver(sqlite_engine) as client:
        response = client.post(
            "/webhooks/qrcode/pix",
            content=body,
            headers={"content-type": "application/json; charset=utf-16"},
        )
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert "utf-16" in detail, detail
    assert "the charset its Content-Type declares" in detail, detail
    assert _counts(sqlite_engine) == (0, 0, 0)


def test_json_in_another_charset_than_declared_is_read(sqlite_engine: Engine) -> None:
    """UTF-8 JSON sent as ``charset=utf-16``: read as JSON tells its own encoding."""
    e2e = e2e_id(7)
    body = json.dumps({"pix": [pix(e2e=e2e, pagador={"nome": "João"})]}, ensure_ascii=False)
    with receiver(sqlite_engine) as client:
        response = client.post(
            "/webhooks/qrcode/pix",
            content=body.encode("utf-8"),
            headers={"content-type": "application/json; charset=utf-16"},
        )
    assert response.status_code == 200, response.text
    assert f"pix:{e2e}" in _items(sqlite_engine)


def test_a_pix_without_its_key_but_with_a_keyed_refund_is_answered_200(
    sqlite_engine: Engine,
) -> None:
    rtr_id = "D" + "7" * 31
    body = {
        "pix": [
            {
                "txid": "abc123",
                "valor": "10.00",
                "devolucoes": [
                    {"id": "d1", "rtrId": rtr_id, "valor": "1.00", "status": "DEVOLVIDO"}
                ],
            }
        ]
    }
    with receiver(sqlite_engine) as client:
        response = _post(client, "/webhooks/qrcode/pix", dumps(body))
    assert response.status_code == 200, response.text
    assert response.json() == {"items": 1, "new": 1, "duplicates": 0}
    with session_scope(sqlite_engine) as session:
        (item,) = session.execute(select(InboxItem)).scalars()
        assert (item.kind, item.status) == ("unsupported", "unsupported")
