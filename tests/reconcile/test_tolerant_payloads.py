"""The payload readers are tolerant (docs/design.md §4): only a missing business key refuses
an item; every other field that does not parse is kept raw and flagged, with a JSON
pointer and what was expected — never the value."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconcile.inbox import NewItem
from reconcile.money import to_cents
from reconcile.payloads import AMOUNT_EXPECTED, PayloadInvalid
from reconcile.payloads.accounts import MovementData, accounts_items
from reconcile.payloads.automatico import cobr_callback_items, rec_callback_items
from reconcile.payloads.pix import Devolucao, PixItem, pix_callback_items
from reconcile.payloads.text import SURROGATE_REPLACED, may_hold_surrogates, mend_surrogates
from reconcile.payloads.tolerant import KEY_UNPADDED, ONE_AS_ARRAY, read_timestamp
from tests.factories import e2e_id, pix
from tests.receiver.deliveries import (
    Sample,
    accounts_sample,
    json_values,
    keyless,
    mutated,
    rec_sample,
    refund_keyless,
    samples,
)

PARSERS: dict[str, Callable[[Any], list[NewItem]]] = {
    "/webhooks/qrcode/pix": pix_callback_items,
    "/webhooks/qrcode/rec": rec_callback_items,
    "/webhooks/qrcode/cobr": cobr_callback_items,
    "/webhooks/accounts": accounts_items,
}
FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CPF, NAME = "12345678909", "Fulana de Tal"


def _read(sample: Sample) -> list[NewItem]:
    # What the receiver hands the readers: JSON text parsed with exact numbers.
    document = json.loads(json.dumps(sample.body, default=str), parse_float=Decimal)
    return PARSERS[sample.route](document)


def _warnings(item: NewItem) -> dict[str, str]:
    return {w.pointer: w.expected for w in item.warnings}


def test_an_amount_in_another_shape_is_flagged_and_the_pix_kept() -> None:
    body = {"pix": [pix(valor={"original": "110.00"}), pix(valor="110.123"), pix(valor=None)]}
    items = pix_callback_items(body)
    assert [i.kind for i in items] == ["pix", "pix", "pix"]
    for item in items:
        assert set(_warnings(item)) == {"/valor"}
        assert _warnings(item)["/valor"].startswith("an amount")
    missing = pix()
    del missing["valor"]
    (item,) = pix_callback_items(missing)
    assert _warnings(item) == {"/valor": _warnings(items[0])["/valor"]}


def test_unknown_enums_and_unreadable_dates_are_kept_and_flagged() -> None:
    refund = {"id": "d1", "valor": "1.00", "status": "ESTORNADO", "natureza": "OUTRA"}
    body = pix(horario="ontem", devolucoes=refund)
    pix_item, refund_item = pix_callback_items(body)
    assert _warnings(pix_item) == {"/horario": "an RFC 3339 date-time"}
    assert refund_item.key == f"refund:{body['endToEndId']}:d1:ESTORNADO"
    assert set(_warnings(refund_item)) == {"/devolucao/status", "/devolucao/natureza"}
    assert json.loads(refund_item.payload)["devolucao"] == refund


def test_unexpected_nesting_is_flagged_where_it_is() -> None:
    data = json.loads(json.dumps(accounts_sample("refund.json", "data").body["data"]))
    data["refunds"][0]["pixRefundAmount"] = {"value": "12.00", "currency": "BRL"}
    data["refunds"].append("not a refund")
    data["payment"] = [{"amount": "42.00"}]
    (item,) = accounts_items({"type": "REFUND", "data": data})
    assert item.kind == "accounts.refund"
    assert set(_warnings(item)) == {
        "/data/refunds/0/pixRefundAmount",
        "/data/refunds/1",
        "/data/payment",
    }


def _partially_refunded(refunds: Any) -> dict[str, Any]:
    return {
        "type": "TRANSFER",
        "data": {
            "id": "p1",
            "idempotencyKey": "ik1",
            "status": "PARTIALLY_REFUNDED",
            "endToEndId": "E12345678202611271200abcdefghijk",
            "createdAt": "2026-11-27T12:00:00Z",
            "payment": {"amount": "10.00"},
            "refunds": refunds,
        },
    }


def test_refunds_as_one_object_are_read_as_an_array_of_one_and_flagged() -> None:
    refund = {
        "endToEndId": "D12345678202611271300abcdefghijk",
        "status": "LIQUIDATED",
        "pixRefundAmount": "2.00",
    }
    (single,) = accounts_items(_partially_refunded(refund))
    (listed,) = accounts_items(_partially_refunded([refund]))
    assert single.key == listed.key == "accounts:TRANSFER:p1:PARTIALLY_REFUNDED:r1"
    assert _warnings(single) == {"/data/refunds": ONE_AS_ARRAY}
    assert _warnings(listed) == {}
    # The raw payload keeps the object as it came; only the reading makes it a list.
    assert json.loads(single.payload)["data"]["refunds"] == refund
    returns = [
        (n, r.model_dump())
        for n, r in MovementData.model_validate(json.loads(single.payload)["data"]).returns()
    ]
    assert returns == [
        (n, r.model_dump())
        for n, r in MovementData.model_validate(json.loads(listed.payload)["data"]).returns()
    ]
    assert returns[0][1]["pixRefundAmount"] == Decimal("2.00")


def test_what_is_unreadable_in_a_single_refund_object_is_flagged_where_it_is() -> None:
    refund = {"status": "liquidated", "pixRefundAmount": "2.001", "endToEndId": "D" * 65}
    (item,) = accounts_items(_partially_refunded(refund))
    assert set(_warnings(item)) == {
        "/data/refunds",
        "/data/refunds/status",
        "/data/refunds/pixRefundAmount",
        "/data/refunds/endToEndId",
    }
    # Nothing readable left in it but its status: still one return, keyed as one.
    assert item.key.endswith(":PARTIALLY_REFUNDED:r1")
    (empty,) = accounts_items(_partially_refunded({}))
    assert empty.key == "accounts:TRANSFER:p1:PARTIALLY_REFUNDED"
    assert _warnings(empty) == {"/data/refunds": ONE_AS_ARRAY}


def test_accounts_envelope_under_payload_or_as_a_list() -> None:
    data = accounts_sample("receive.json", "data").body["data"]
    (under_payload,) = accounts_items({"type": "RECEIVE", "payload": data})
    assert under_payload.key == "accounts:RECEIVE:rcv-000123:LIQUIDATED"
    assert _warnings(under_payload) == {"/payload": "the notification under data"}
    other = {**data, "id": "rcv-000124"}
    listed = accounts_items({"type": "RECEIVE", "data": [data, other]})
    assert [i.key for i in listed] == [
        "accounts:RECEIVE:rcv-000123:LIQUIDATED",
        "accounts:RECEIVE:rcv-000124:LIQUIDATED",
    ]
    assert json.loads(listed[1].payload)["data"]["id"] == "rcv-000124"
    assert all("/data" in _warnings(i) for i in listed)


def test_type_from_the_path_and_unknown_types() -> None:
    data = accounts_sample("transfer.json", "data").body["data"]
    (item,) = accounts_items({"data": data}, "transfer")
    assert item.kind == "accounts.transfer"
    (unknown,) = accounts_items({"type": "PIX_AUTOMATICO_V9", "data": data})
    assert (unknown.kind, unknown.status) == ("unsupported", "unsupported")
    assert unknown.key.startswith("unsupported:PIX_AUTOMATICO_V9:")


@pytest.mark.parametrize(
    ("route", "body", "label"),
    [
        ("/webhooks/qrcode/pix", "double-encoded", "PIX"),
        ("/webhooks/qrcode/pix", {"pix": 42}, "PIX"),
        ("/webhooks/qrcode/rec", {"recs": "x"}, "REC"),
        ("/webhooks/qrcode/cobr", None, "COBR"),
        ("/webhooks/accounts", {"type": "RECEIVE", "data": "x"}, "RECEIVE"),
        ("/webhooks/accounts", {"type": "RECEIVE"}, "RECEIVE"),
        ("/webhooks/accounts", {"tipo": "RECEIVE", "dados": {}}, "UNKNOWN"),
        ("/webhooks/accounts", [1, 2], "UNKNOWN"),
    ],
)
def test_a_body_no_shape_explains_is_one_unsupported_item(
    route: str, body: Any, label: str
) -> None:
    (item,) = PARSERS[route](body)
    assert (item.kind, item.status) == ("unsupported", "unsupported")
    assert item.key.startswith(f"unsupported:{label}:")
    assert json.loads(item.payload) == body


@pytest.mark.parametrize(
    ("route", "body", "where"),
    [
        ("/webhooks/qrcode/pix", {"pix": [{"valor": "1.00"}]}, "/pix/0/endToEndId"),
        ("/webhooks/qrcode/pix", {**pix(), "endToEndId": {"id": "E123"}}, "/endToEndId"),
        ("/webhooks/qrcode/pix", {"pix": [7, 8]}, "/pix/0"),
        ("/webhooks/qrcode/rec", {"recs": [{"status": "APROVADA"}, 3]}, "/recs/0/idRec"),
        ("/webhooks/qrcode/rec", {"recs": [{"status": "APROVADA"}]}, "/recs/0/idRec"),
        ("/webhooks/qrcode/cobr", {"cobsr": {"txid": None, "status": "ATIVA"}}, "/cobsr/txid"),
        ("/webhooks/accounts", {"type": "TRANSFER", "data": {"status": "X"}}, "/data"),
        (
            "/webhooks/accounts",
            {"type": "INFRACTION", "payload": {"endToEndId": "E"}},
            "/payload/id",
        ),
    ],
)
def test_without_its_key_an_item_refuses_the_delivery(route: str, body: Any, where: str) -> None:
    with pytest.raises(PayloadInvalid) as refused:
        PARSERS[route](body)
    assert refused.value.violations is not None
    assert refused.value.violations[0]["property"] == where


@pytest.mark.parametrize(
    ("route", "body", "where"),
    [
        ("/webhooks/qrcode/pix", pix(e2e="E123"), "/endToEndId"),
        ("/webhooks/qrcode/pix", {"pix": [pix(e2e=e2e_id(1)[:-1])]}, "/pix/0/endToEndId"),
        ("/webhooks/qrcode/pix", {"pix": [{"end_to_end_id": "E-1"}]}, "/pix/0/end_to_end_id"),
        (
            "/webhooks/qrcode/pix",
            {"pix": [pix(e2e=e2e_id(1), devolucoes={"rtrId": "D-1", "status": "DEVOLVIDO"})]},
            "/pix/0/devolucoes/rtrId",
        ),
        ("/webhooks/qrcode/rec", {"recs": [{"idRec": "R" * 36}]}, "/recs/0/idRec"),
        ("/webhooks/qrcode/cobr", {"cobsr": {"txid": "no spaces allowed"}}, "/cobsr/txid"),
        (
            "/webhooks/qrcode/cobr",
            {"cobsr": {"txid": 12345678901234567890123456789012345678}},
            "/cobsr/txid",
        ),
    ],
)
def test_a_key_there_but_not_as_documented_keeps_its_item_whole(
    route: str, body: Any, where: str
) -> None:
    """Text (or an integer) where the key goes, that does not read as the key: the object
    is kept as unsupported, flagged at its key with what was expected, never its value."""
    (kept,) = [item for item in PARSERS[route](body) if item.kind == "unsupported"]
    assert kept.status == "unsupported"
    (warning,) = kept.warnings
    assert warning.pointer == where
    assert "-1" not in warning.expected
    assert "no spaces" not in warning.expected
    assert kept.refs


@pytest.mark.parametrize(
    ("route", "body", "kinds", "where"),
    [
        (
            "/webhooks/qrcode/pix",
            {"pix": [pix(), {"valor": "1.00"}]},
            ["pix", "unsupported"],
            "/pix/1",
        ),
        (
            "/webhooks/qrcode/pix",
            pix(devolucoes=[{"valor": "1.00"}]),
            ["pix", "unsupported"],
            "/devolucoes/0",
        ),
        ("/webhooks/qrcode/pix", {"pix": [pix(), 7]}, ["pix", "unsupported"], "/pix/1"),
        (
            "/webhooks/accounts",
            {"type": "TRANSFER", "data": [{"id": "t1", "status": "LIQUIDATED"}, {"status": "X"}]},
            ["accounts.transfer", "unsupported"],
            "/data/1",
        ),
    ],
)
def test_an_item_without_its_key_beside_readable_ones_is_kept_whole(
    route: str, body: Any, kinds: list[str], where: str
) -> None:
    items = PARSERS[route](body)
    assert [item.kind for item in items] == kinds
    kept = items[-1]
    assert kept.status == "unsupported"
    assert [w.pointer for w in kept.warnings] == [where]
    # Sent again, the same item is the same key: a duplicate, never a second row.
    assert PARSERS[route](body)[-1].key == kept.key


def test_warnings_and_violations_never_carry_the_values() -> None:
    secret = {"cpf": CPF * 2, "nome": NAME * 20}
    body = pix(pagador=secret, valor=f"R$ {CPF}", horario=NAME, chave=CPF * 10)
    (item,) = pix_callback_items(body)
    assert set(_warnings(item)) == {"/pagador/cpf", "/pagador/nome", "/valor", "/horario", "/chave"}
    text = json.dumps([w.as_json() for w in item.warnings])
    # A CPF where the key goes: kept whole, flagged at the key.
    (kept,) = pix_callback_items({**body, "endToEndId": CPF})
    text += json.dumps([w.as_json() for w in kept.warnings])
    with pytest.raises(PayloadInvalid) as refused:
        pix_callback_items({**body, "endToEndId": [CPF]})
    text += json.dumps(refused.value.violations)
    assert CPF not in text
    assert NAME not in text


def test_refs_name_every_reference_an_item_carries() -> None:
    body = pix(e2e=e2e_id(5), txid="pedido42", devolucoes={"id": "d1", "rtrId": "D" * 32})
    pix_item, refund = pix_callback_items(body)
    assert set(pix_item.refs or ()) == {e2e_id(5), "pedido42", "D" * 32}
    assert set(refund.refs or ()) == {e2e_id(5), "d1", "D" * 32}
    receive = accounts_sample("receive.json", "data").body
    (item,) = accounts_items(json.loads(json.dumps(receive)))
    assert set(item.refs or ()) == {"rcv-000123", "E18236120202611221601c0000000002", "pedido45"}


@FAST
@given(st.data())
def test_any_change_that_keeps_the_keys_is_accepted(data: st.DataObject) -> None:
    sample, done = data.draw(samples().flatmap(mutated))
    items = _read(sample)
    assert items, done
    for item in items:
        assert len(item.key) <= 200
        for warning in item.warnings:
            assert warning.pointer.startswith("/"), warning


@FAST
@given(st.data())
def test_taking_an_items_keys_away_refuses_the_delivery(data: st.DataObject) -> None:
    sample = data.draw(samples().flatmap(keyless))
    with pytest.raises(PayloadInvalid) as refused:
        _read(sample)
    assert refused.value.violations


@FAST
@given(st.data())
def test_taking_a_refunds_keys_away_keeps_it_whole_beside_its_pix(data: st.DataObject) -> None:
    sample = data.draw(samples().flatmap(refund_keyless))
    items = _read(sample)
    unsupported = [item for item in items if item.kind == "unsupported"]
    assert len(unsupported) == (1 if len(sample.key_groups) > 1 else 0)
    assert len(items) == len(sample.key_groups)


@FAST
@given(st.sampled_from(sorted(PARSERS)), json_values)
def test_any_json_is_read_or_refused_cleanly(route: str, document: Any) -> None:
    try:
        items = PARSERS[route](document)
    except PayloadInvalid as refused:
        violations = refused.violations
    else:
        assert all(len(item.key) <= 200 for item in items)
        return
    assert violations


AS_WRITTEN = "<as written>"


def _as_sent(body: Any, written: str) -> Any:
    """``body`` with each ``AS_WRITTEN`` value replaced by the JSON text ``written``, parsed
    as the receiver parses it."""
    text = json.dumps(body).replace(json.dumps(AS_WRITTEN), written)
    return json.loads(text, parse_float=Decimal)


def _worker_reads(item: NewItem) -> Any:
    """The stored payload as the worker parses it."""
    return json.loads(item.payload, parse_float=Decimal)


@pytest.mark.parametrize(
    ("written", "cents"),
    [
        ("1e2", 10000),
        ("1E+2", 10000),
        ("110.000", 11000),
        ("10.000", 1000),
        ("1.5E+2", 15000),
        ("1.10E1", 1100),
        ('"1.5E+2"', 15000),
        ('"110.000"', 11000),
    ],
)
def test_an_exact_amount_in_any_notation_is_read_alike_by_receiver_and_worker(
    written: str, cents: int
) -> None:
    refund = {"id": "d1", "valor": AS_WRITTEN, "status": "DEVOLVIDO"}
    body = _as_sent(pix(e2e=e2e_id(1), valor=AS_WRITTEN, devolucoes=refund), written)
    pix_item, refund_item = pix_callback_items(body)
    assert (_warnings(pix_item), _warnings(refund_item)) == ({}, {})
    stored_pix = PixItem.model_validate(_worker_reads(pix_item))
    stored_refund = Devolucao.model_validate(_worker_reads(refund_item)["devolucao"])
    assert stored_pix.warnings() == stored_refund.warnings() == []
    assert stored_pix.valor is not None
    assert stored_refund.valor is not None
    assert (to_cents(stored_pix.valor), to_cents(stored_refund.valor)) == (cents, cents)

    receive = accounts_sample("receive.json", "data").body
    receive["data"]["payment"]["amount"] = AS_WRITTEN
    (movement,) = accounts_items(_as_sent(receive, written))
    assert _warnings(movement) == {}
    stored = MovementData.model_validate(_worker_reads(movement)["data"])
    assert stored.payment is not None
    assert stored.payment.amount is not None
    assert to_cents(stored.payment.amount) == cents


@pytest.mark.parametrize("written", ["1.005", "1E-3", '"1.005"', '"1e"', "1E+20", '"0x10"'])
def test_an_amount_that_is_no_exact_centavo_is_flagged_on_both_sides(written: str) -> None:
    (item,) = pix_callback_items(_as_sent(pix(e2e=e2e_id(1), valor=AS_WRITTEN), written))
    assert set(_warnings(item)) == {"/valor"}
    stored = PixItem.model_validate(_worker_reads(item))
    assert stored.valor is None
    assert [w.pointer for w in stored.warnings()] == ["/valor"]


QR_ROUTES = ["/webhooks/qrcode/pix", "/webhooks/qrcode/rec", "/webhooks/qrcode/cobr"]
NOT_AN_ITEM = [
    {"evento": "teste_webhook"},
    {"test": True},
    {"ping": "pong"},
    {"Pix": [pix()]},
    [[pix()]],
    [{"test": True}],
    {"cobr": [{"txid": "abc"}]},
]


@pytest.mark.parametrize("route", QR_ROUTES)
@pytest.mark.parametrize("body", NOT_AN_ITEM)
def test_a_body_without_any_of_the_items_fields_is_kept_not_refused(route: str, body: Any) -> None:
    (item,) = PARSERS[route](body)
    assert (item.kind, item.status) == ("unsupported", "unsupported")
    assert [w.pointer for w in item.warnings] == ["/"]
    assert json.loads(item.payload) == json.loads(json.dumps(body))


@pytest.mark.parametrize(
    ("route", "body", "where"),
    [
        ("/webhooks/qrcode/pix", {"valor": "1.00", "ping": 1}, "/endToEndId"),
        ("/webhooks/qrcode/pix", [{"horario": "2026-11-22T15:00:00Z"}], "/0/endToEndId"),
        ("/webhooks/qrcode/rec", {"atualizacao": []}, "/idRec"),
        ("/webhooks/qrcode/cobr", [{"tentativas": []}], "/0/txid"),
    ],
)
def test_a_flat_item_with_its_own_fields_but_no_key_is_still_refused(
    route: str, body: Any, where: str
) -> None:
    with pytest.raises(PayloadInvalid) as refused:
        PARSERS[route](body)
    assert refused.value.violations is not None
    assert refused.value.violations[0]["property"] == where


@pytest.mark.parametrize("envelope", ["data", "payload"])
def test_the_documented_body_inside_an_envelope_is_read_through(envelope: str) -> None:
    one = pix(e2e=e2e_id(1), devolucoes={"id": "d1", "valor": "1.00", "status": "DEVOLVIDO"})
    pix_item, refund_item = pix_callback_items({envelope: {"pix": [one]}})
    assert (pix_item.key, refund_item.key) == (
        f"pix:{e2e_id(1)}",
        f"refund:{e2e_id(1)}:d1:DEVOLVIDO",
    )
    for item in (pix_item, refund_item):
        assert _warnings(item) == {f"/{envelope}": f'{{"pix": [...]}} itself, not under {envelope}'}
    assert json.loads(pix_item.payload) == one
    rec = json.loads(json.dumps(rec_sample().body))
    (rec_item,) = rec_callback_items({envelope: rec})
    assert rec_item.kind == "rec"
    assert f"/{envelope}" in _warnings(rec_item)
    with pytest.raises(PayloadInvalid) as refused:
        pix_callback_items({envelope: {"pix": [{"endToEndId": ["bad"]}]}})
    assert refused.value.violations is not None
    assert refused.value.violations[0]["property"] == f"/{envelope}/pix/0/endToEndId"


def test_a_pix_without_a_readable_key_alone_is_still_refused() -> None:
    with pytest.raises(PayloadInvalid):
        pix_callback_items({"pix": [{"endToEndId": ["bad"]}]})
    with pytest.raises(PayloadInvalid):
        pix_callback_items({"endToEndId": None})


def test_a_pix_without_its_key_whose_refund_has_its_own_is_kept_not_refused() -> None:
    rtr_id = "D" + "1" * 31
    refund = {"id": "d1", "rtrId": rtr_id, "valor": "1.00", "status": "DEVOLVIDO"}
    for listed in ([refund], refund):
        body = {"pix": [{"txid": "abc123", "valor": "10.00", "devolucoes": listed}]}
        (item,) = pix_callback_items(body)
        assert item.kind == "unsupported"
        assert json.loads(item.payload) == body["pix"][0]
        assert rtr_id in (item.refs or ())
        assert _warnings(item) == {"/pix/0": "a Pix or a refund with its key"}
    # A refund's own id means nothing without its Pix's endToEndId.
    with pytest.raises(PayloadInvalid):
        pix_callback_items({"pix": [{"txid": "abc123", "devolucoes": [{"id": "d1"}]}]})


def test_a_refund_without_its_key_is_told_apart_by_its_pix() -> None:
    refund = {"valor": "2.00", "status": "DEVOLVIDO"}
    kept = [pix_callback_items(pix(e2e=e2e_id(n), devolucoes=[refund]))[-1] for n in (1, 2, 1)]
    assert [item.kind for item in kept] == ["unsupported"] * 3
    assert kept[0].key != kept[1].key
    assert kept[0].key == kept[2].key
    assert [w.pointer for w in kept[0].warnings] == ["/devolucoes/0"]
    assert json.loads(kept[0].payload) == {"endToEndId": e2e_id(1), "devolucao": refund}
    assert kept[0].refs == (e2e_id(1),)


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("2026-11-26T12:00:00", datetime(2026, 11, 26, 15, tzinfo=UTC)),
        ("2026-11-26T12:00:00.250", datetime(2026, 11, 26, 15, 0, 0, 250000, tzinfo=UTC)),
        ("2026-11-26", datetime(2026, 11, 26, 3, tzinfo=UTC)),
    ],
)
def test_a_time_without_its_offset_is_sao_paulo_time_and_flagged(
    written: str, utc: datetime
) -> None:
    refund = {"id": "d1", "status": "DEVOLVIDO", "horario": {"solicitacao": written}}
    pix_item, refund_item = pix_callback_items(pix(horario=written, devolucoes=refund))
    expected = "an RFC 3339 date-time with its offset (read as São Paulo time)"
    assert _warnings(pix_item) == {"/horario": expected}
    assert _warnings(refund_item)["/devolucao/horario/solicitacao"] == expected
    assert read_timestamp(written) == utc
    # With an offset, nothing changes.
    assert read_timestamp("2026-11-26T12:00:00Z") == datetime(2026, 11, 26, 12, tzinfo=UTC)
    assert read_timestamp("2026-11-26T12:00:00-03:00") == datetime(2026, 11, 26, 15, tzinfo=UTC)
    (with_offset,) = pix_callback_items(pix(horario="2026-11-26T12:00:00z"))
    assert _warnings(with_offset) == {}


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("2026-11-26T12:00:00-03", datetime(2026, 11, 26, 15, tzinfo=UTC)),
        ("2026-11-26T15:00:00+0000", datetime(2026, 11, 26, 15, tzinfo=UTC)),
        ("2026-11-26T15:00Z", datetime(2026, 11, 26, 15, tzinfo=UTC)),
    ],
)
def test_a_time_read_by_a_guess_is_flagged(written: str, utc: datetime) -> None:
    """Read (the offset is there), but not as RFC 3339 writes it: what was read is a guess
    somebody should know about."""
    (pix_item,) = pix_callback_items(pix(horario=written))
    assert _warnings(pix_item) == {
        "/horario": "an RFC 3339 date-time, such as 2026-11-22T14:30:00-03:00 (read leniently)"
    }
    assert read_timestamp(written) == utc
    for exact in ("2026-11-26T15:00:00Z", "2026-11-26T12:00:00.5-03:00", "2026-11-26 15:00:00Z"):
        (item,) = pix_callback_items(pix(horario=exact))
        assert _warnings(item) == {}


def _padded(value: str) -> str:
    return f" {value}\n"


RTR = "D18236120202611221530r0000000001"
PADDED_KEYS = [
    (
        "/webhooks/qrcode/pix",
        {"pix": [pix(e2e=_padded(e2e_id(1)))]},
        f"pix:{e2e_id(1)}",
        "/endToEndId",
    ),
    (
        "/webhooks/qrcode/pix",
        {
            "pix": [
                pix(
                    e2e=e2e_id(1),
                    devolucoes={"rtrId": _padded(RTR), "valor": "1.00", "status": "DEVOLVIDO"},
                )
            ]
        },
        f"refund:{RTR}:DEVOLVIDO",
        "/devolucao/rtrId",
    ),
    (
        "/webhooks/qrcode/pix",
        {
            "pix": [
                pix(
                    e2e=e2e_id(1),
                    devolucoes={"id": _padded("d1"), "valor": "1.00", "status": "DEVOLVIDO"},
                )
            ]
        },
        f"refund:{e2e_id(1)}:d1:DEVOLVIDO",
        "/devolucao/id",
    ),
    (
        "/webhooks/qrcode/rec",
        {"recs": [{"idRec": _padded("RR1"), "status": "APROVADA"}]},
        "rec:RR1:APROVADA:",
        "/idRec",
    ),
    (
        "/webhooks/qrcode/cobr",
        {"cobsr": [{"txid": _padded("tx1"), "status": "ATIVA"}]},
        "cobr:tx1:ATIVA:0",
        "/txid",
    ),
    *(
        (
            "/webhooks/accounts",
            {
                "type": "TRANSFER",
                "data": {
                    name: _padded("k-1"),
                    "status": "LIQUIDATED",
                    "payment": {"amount": "1.00"},
                },
            },
            "accounts:TRANSFER:k-1:LIQUIDATED",
            f"/data/{name}",
        )
        for name in ("id", "idempotencyKey", "endToEndId")
    ),
    (
        "/webhooks/accounts",
        {"type": "INFRACTION", "data": {"id": _padded("inf-1"), "status": "OPEN"}},
        "accounts:INFRACTION:inf-1:OPEN",
        "/data/id",
    ),
]


@pytest.mark.parametrize(("route", "body", "key", "where"), PADDED_KEYS)
def test_whitespace_around_a_business_key_is_stripped_and_flagged(
    route: str, body: Any, key: str, where: str
) -> None:
    items = {item.key: item for item in PARSERS[route](body)}
    assert _warnings(items[key]) == {where: KEY_UNPADDED}


def test_a_key_unreadable_without_its_whitespace_is_flagged_for_what_it_is() -> None:
    refund = {"rtrId": _padded("short"), "id": "d1", "valor": "1.00", "status": "DEVOLVIDO"}
    (_, item) = pix_callback_items({"pix": [pix(e2e=e2e_id(1), devolucoes=refund)]})
    assert _warnings(item) == {"/devolucao/rtrId": "a string matching ^[a-zA-Z0-9]{32}$"}
    (kept,) = pix_callback_items({"pix": [pix(e2e=_padded("short"))]})
    pattern = "a string matching ^[a-zA-Z0-9]{32}$"
    assert _warnings(kept) == {
        "/pix/0/endToEndId": f"{pattern}: the key of a Pix, kept whole for it"
    }


def test_mended_text_is_flagged_where_each_item_holds_it() -> None:
    refund = {"id": "d\ud800", "valor": "1.00", "status": "DEVOLVIDO"}
    document = mend_surrogates(
        {"pix": [pix(e2e=e2e_id(1), infoPagador="\udc00", devolucoes=[refund])]}
    )
    pix_item, refund_item = pix_callback_items(document)
    assert _warnings(pix_item) == {
        "/infoPagador": SURROGATE_REPLACED,
        "/devolucoes/0/id": SURROGATE_REPLACED,
    }
    assert refund_item.key == f"refund:{e2e_id(1)}:d\ufffd:DEVOLVIDO"
    assert _warnings(refund_item) == {"/devolucao/id": SURROGATE_REPLACED}
    assert json.loads(refund_item.payload)["devolucao"]["id"] == "d\ufffd"


def test_surrogates_are_mended_and_pairs_kept() -> None:
    mended = mend_surrogates(
        json.loads('{"a\\ud800": ["\\ud83d\\ude00", "x\\udc00\\ud800", "\ufffd"]}')
    )
    assert mended == {"a\ufffd": ["\U0001f600", "x\ufffd\ufffd", "\ufffd"]}
    assert [type(value) is str for value in mended["a\ufffd"]] == [True, False, True]
    assert not may_hold_surrogates('{"a": "\\u00e9"}')
    assert may_hold_surrogates('{"a": "\\uD800"}')


@pytest.mark.parametrize(
    "payment",
    [None, {"currency": "BRL"}, {"amount": None}, "absent"],
)
def test_a_movement_without_its_amount_is_flagged(payment: Any) -> None:
    data: dict[str, Any] = {"id": "t-1", "status": "LIQUIDATED"}
    if payment != "absent":
        data["payment"] = payment
    for kind in ("TRANSFER", "RECEIVE", "REFUND"):
        (item,) = accounts_items({"type": kind, "data": data})
        assert _warnings(item) == {"/data/payment/amount": AMOUNT_EXPECTED}
    # A cash-out failure need not say how much: only a movement moves money.
    (cashout,) = accounts_items({"type": "CASHOUT", "data": data})
    assert _warnings(cashout) == {}


def test_a_payment_of_another_shape_is_flagged_once() -> None:
    data = {"id": "t-1", "status": "LIQUIDATED", "payment": 5}
    (item,) = accounts_items({"type": "TRANSFER", "data": data})
    assert _warnings(item) == {"/data/payment": "an object"}


@pytest.mark.parametrize(
    ("reference", "expected"),
    [("", "at least 1 character"), ("x" * 300, "at most 100 characters")],
)
def test_an_id_of_the_wrong_length_says_which_length(reference: str, expected: str) -> None:
    (item,) = accounts_items(
        {
            "type": "TRANSFER",
            "data": {
                "id": reference,
                "idempotencyKey": "idem-1701",
                "status": "LIQUIDATED",
                "payment": {"amount": "1.00"},
            },
        }
    )
    assert [(w.pointer, w.expected) for w in item.warnings] == [("/data/id", expected)]
    assert item.key == "accounts:TRANSFER:idem-1701:LIQUIDATED"


@pytest.mark.parametrize("written", ["abc", "99999999999999999999.00", Decimal("1e30"), True])
def test_an_infractions_amount_that_cannot_be_read_is_flagged(written: Any) -> None:
    data = {"id": "inf-2", "status": "OPEN", "amount": written, "blockedAmount": "10.00"}
    (item,) = accounts_items({"type": "INFRACTION", "data": data})
    assert _warnings(item) == {"/data/amount": AMOUNT_EXPECTED}
    assert item.key == "accounts:INFRACTION:inf-2:OPEN"
    readable = {**data, "amount": "300.00", "debitedAmount": 12}
    (item,) = accounts_items({"type": "INFRACTION", "data": readable})
    assert _warnings(item) == {}
    # An open case has debited nothing: ``null`` says so, and is no unreadable amount.
    (item,) = accounts_items({"type": "INFRACTION", "data": {**readable, "debitedAmount": None}})
    assert _warnings(item) == {}


def test_a_running_balance_may_pass_the_largest_amount_of_one_pix() -> None:
    """9.999.999.999,99 caps one Pix; an account holding more is an account like any
    other, and its statement's running balance reads."""
    from reconcile.payloads.statement import statement_item

    line = {"id": "l-1", "type": "CREDIT", "amount": "1.00", "balanceAfter": "10000000000.00"}
    assert statement_item(line).warnings == ()
    negative = {**line, "id": "l-2", "balanceAfter": "-10000000000.00"}
    assert statement_item(negative).warnings == ()
    # Past what a BIGINT of centavos holds it is junk, flagged like any unreadable amount.
    junk = {**line, "id": "l-3", "balanceAfter": "1" + "0" * 20}
    assert [w.pointer for w in statement_item(junk).warnings] == ["/balanceAfter"]


@pytest.mark.parametrize(
    "written",
    ["2026-11-27T15:05:00Z", "2026-11-27T15:05:00.000000Z", "2026-11-27T12:05:00-03:00"],
)
def test_a_recurrence_update_is_one_key_whatever_its_time_notation(written: str) -> None:
    """The webhook and ``GET /rec`` may write one instant differently: one item, so that a
    late webhook after a poll is a duplicate."""
    rec = {
        "idRec": "RR12345678202611271zzzzzzzz1",
        "status": "APROVADA",
        "atualizacao": [
            {"status": "CRIADA", "data": "2026-11-27T12:00:00Z"},
            {"status": "APROVADA", "data": written},
        ],
    }
    (item,) = rec_callback_items({"recs": [rec]})
    assert item.key == "rec:RR12345678202611271zzzzzzzz1:APROVADA:2026-11-27T15:05:00.000Z"


@pytest.mark.parametrize(
    ("field", "written", "read"),
    [
        ("cpf", "123.456.789-09", "12345678909"),
        ("cnpj", "12.345.678/0001-95", "12345678000195"),
        ("cnpj", "12345678000195", "12345678000195"),
    ],
)
def test_a_payers_document_written_as_people_write_it_is_its_digits(
    field: str, written: str, read: str
) -> None:
    from reconcile.handlers.pix import tolerant_pix_fields

    body = pix(pagador={field: written, "nome": "Loja"})
    (item,) = pix_callback_items({"pix": [body]})
    assert _warnings(item) == {}
    assert json.loads(item.payload)["pagador"][field] == written  # the body as it came
    assert tolerant_pix_fields(json.loads(item.payload)).payer_document == read


@pytest.mark.parametrize("written", ["987.0", "987.00", "9.87E+2", "987"])
def test_a_numeric_id_written_with_a_zero_fraction_keys_as_the_integer(written: str) -> None:
    """Java's ``Double`` writes the id 987 as ``987.0``: the case is the same case, and
    the delivery, its only key being that id, is not refused."""
    body = json.loads(
        '{"type": "INFRACTION", "data": {"id": ' + written + ', "status": "OPEN"}}',
        parse_float=Decimal,
    )
    (item,) = accounts_items(body)
    assert item.key == "accounts:INFRACTION:987:OPEN"
    assert "987" in item.ref_values()


@pytest.mark.parametrize("written", ["987.5", "1E+999999"])
def test_a_numeric_id_with_a_fraction_is_no_id(written: str) -> None:
    body = json.loads(
        '{"type": "INFRACTION", "data": {"id": ' + written + ', "status": "OPEN"}}',
        parse_float=Decimal,
    )
    with pytest.raises(PayloadInvalid):
        accounts_items(body)


def _notification(name: str) -> dict[str, Any]:
    # As the receiver hands it over: exact numbers.
    sample = accounts_sample(name, "data").body
    body: dict[str, Any] = json.loads(json.dumps(sample, default=str), parse_float=Decimal)
    return body


def test_a_bare_array_of_accounts_notifications_is_one_item_each() -> None:
    transfer, receive = _notification("transfer.json"), _notification("receive.json")
    listed = accounts_items([transfer, receive])
    assert [i.key for i in listed] == [
        "accounts:TRANSFER:98765:LIQUIDATED",
        "accounts:RECEIVE:rcv-000123:LIQUIDATED",
    ]
    assert [json.loads(i.payload)["data"]["id"] for i in listed] == [98765, "rcv-000123"]
    each = 'one notification {"type": ..., "data": {...}} (an array became one item each)'
    assert all(_warnings(i)["/"] == each for i in listed)
    # An entry without its key is kept whole beside the readable one, as in a data array.
    keyless_entry = {"type": "TRANSFER", "data": {"status": "LIQUIDATED"}}
    readable, kept = accounts_items([transfer, keyless_entry])
    assert readable.key == "accounts:TRANSFER:98765:LIQUIDATED"
    assert (kept.status, json.loads(kept.payload)) == ("unsupported", keyless_entry)
    assert "/1" in _warnings(kept)
    with pytest.raises(PayloadInvalid) as refused:
        accounts_items([keyless_entry])
    assert refused.value.violations is not None
    assert refused.value.violations[0]["property"] == "/0/data"


@pytest.mark.parametrize(("envelope", "name"), [("data", "webhookType"), ("payload", "type")])
def test_an_accounts_type_inside_the_object_is_read_from_there(envelope: str, name: str) -> None:
    """The sandbox's own notifications name their type in ``data.webhookType``; a body
    without ``type`` beside ``data`` is read as that type, flagged where it was."""
    data = {**_notification("transfer.json")["data"], "webhookType": None, name: "transfer"}
    (item,) = accounts_items({envelope: data})
    assert item.key == "accounts:TRANSFER:98765:LIQUIDATED"
    assert _warnings(item)[f"/{envelope}/{name}"] == (
        "the notification's type as type beside data (read from here); the type in capitals"
        " (read as TRANSFER)"
    )
    (unknown,) = accounts_items({"data": {**data, name: "INVOICE"}})
    assert unknown.key.startswith("unsupported:INVOICE:")


def test_a_path_segment_naming_no_type_never_enters_a_key() -> None:
    """``/webhooks/accounts/12345678909``: a CPF in an unsupported item's key would be shown
    unmasked by every listing and log line naming the item."""
    untyped = {"data": {"id": "x-1", "status": "LIQUIDATED"}}
    for segment in (CPF, "123.456.789-09", "conta1"):
        for body in (untyped, [1, 2], "text"):
            (item,) = accounts_items(body, segment)
            assert item.key.startswith("unsupported:UNKNOWN:"), (segment, body)
            assert "12345678909" not in item.key
    (flagged,) = accounts_items(untyped, CPF)
    assert "/type" in _warnings(flagged)
    # Documented paths keep their keys: a type the path names, known or not.
    (invoice,) = accounts_items(untyped, "invoice")
    assert invoice.key.startswith("unsupported:INVOICE:")
    (transfer,) = accounts_items(untyped, "transfer")
    assert transfer.key == "accounts:TRANSFER:x-1:LIQUIDATED"
    # The type inside the object still reads it.
    (inside,) = accounts_items({"data": {**untyped["data"], "webhookType": "RECEIVE"}}, CPF)
    assert inside.key == "accounts:RECEIVE:x-1:LIQUIDATED"


@pytest.mark.parametrize("path", ["Maria", "joaosilva", "Fulana-de-Tal", "Maria/Silva", "made-up"])
def test_a_path_of_letters_naming_no_type_never_enters_a_key(path: str) -> None:
    """``/webhooks/accounts/Maria``: a word is not a type because it is made of letters; a
    person's name in an unsupported item's key would be shown unmasked wherever the item
    is. Only a type the provider notifies enters a key; the delivery is kept all the same."""
    untyped = {"data": {"id": "x-1", "status": "LIQUIDATED"}}
    for body in (untyped, {"foo": 1}, [1, 2]):
        (item,) = accounts_items(body, path)
        assert item.key.startswith("unsupported:UNKNOWN:"), (path, body)
        assert item.status == "unsupported"
        for word in path.split("/"):
            assert word.upper() not in item.key
    (flagged,) = accounts_items(untyped, path)
    assert _warnings(flagged) == {"/type": "the notification type (the path names none)"}
    # The provider's own types keep their names, read or unsupported.
    for named, label in (
        ("invoice", "INVOICE"),
        ("Crypto", "CRYPTO"),
        (f"{path}/invoice", "INVOICE"),
    ):
        (kept,) = accounts_items(untyped, named)
        assert kept.key.startswith(f"unsupported:{label}:"), named
    (read,) = accounts_items(untyped, f"{path}/transfer")
    assert read.key == "accounts:TRANSFER:x-1:LIQUIDATED"


def test_a_path_naming_two_types_is_read_as_the_body_says() -> None:
    """``/webhooks/accounts/transfer/receive``: a type appended to a URL registered with
    another. The body's word decides; where the path names another, it is flagged."""
    data = {"id": "r-1", "status": "LIQUIDATED", "payment": {"amount": "5.00"}}
    (typed,) = accounts_items({"type": "RECEIVE", "data": data}, "transfer/receive")
    assert typed.key == "accounts:RECEIVE:r-1:LIQUIDATED"
    assert _warnings(typed) == {"/type": "the type the path names, TRANSFER (read as the body's)"}
    (inner,) = accounts_items({"data": {**data, "webhookType": "RECEIVE"}}, "transfer/receive")
    assert inner.key == "accounts:RECEIVE:r-1:LIQUIDATED"
    assert _warnings(inner) == {
        "/data/webhookType": "the notification's type as type beside data (read from here);"
        " the type the path names, TRANSFER (read as the body's)"
    }
    # The body names none: the type the provider appended, the last, flagged.
    (untyped,) = accounts_items({"data": data}, "transfer/receive")
    assert untyped.key == "accounts:RECEIVE:r-1:LIQUIDATED"
    assert _warnings(untyped) == {
        "/type": "one type in the path (it names TRANSFER and RECEIVE; read as the last)"
    }
    # One type named once more, or beside words that name none, is that type.
    (again,) = accounts_items({"data": data}, "Receive/Maria/receive")
    assert (again.key, again.warnings) == ("accounts:RECEIVE:r-1:LIQUIDATED", ())


def test_the_type_inside_the_object_outweighs_the_path() -> None:
    """The object's ``webhookType`` is the provider's word, the path only where the URL was
    registered: a RECEIVE posted to ``…/accounts/transfer`` is no payout."""
    payment = {"amount": "5.00"}
    data = {"id": "r-1", "status": "LIQUIDATED", "webhookType": "RECEIVE", "payment": payment}
    (item,) = accounts_items({"data": data}, "transfer")
    assert item.key == "accounts:RECEIVE:r-1:LIQUIDATED"
    assert "TRANSFER" in _warnings(item)["/data/webhookType"]
    # Where they agree, the path named it as documented: nothing to flag.
    (agreed,) = accounts_items({"data": data}, "receive")
    assert (agreed.key, agreed.warnings) == ("accounts:RECEIVE:r-1:LIQUIDATED", ())


def test_a_data_array_whose_objects_name_each_its_type_is_read_object_by_object() -> None:
    """``{"data": [{webhookType: TRANSFER, …}, {webhookType: RECEIVE, …}]}``: each object
    by its own type; one naming none as the path says, else kept as unsupported."""
    transfer = {"id": "t-1", "status": "LIQUIDATED", "webhookType": "TRANSFER"}
    receive = {"id": "r-1", "status": "LIQUIDATED", "webhookType": "receive"}
    untyped = {"id": "u-1", "status": "LIQUIDATED"}
    items = accounts_items({"data": [transfer, receive, untyped]})
    assert [i.key for i in items[:2]] == [
        "accounts:TRANSFER:t-1:LIQUIDATED",
        "accounts:RECEIVE:r-1:LIQUIDATED",
    ]
    assert items[2].key.startswith("unsupported:UNKNOWN:")
    assert [json.loads(i.payload)["data"]["id"] for i in items] == ["t-1", "r-1", "u-1"]
    each = "one object (an array became one item each)"
    assert all(_warnings(i)["/data"] == each for i in items)
    assert "(read as RECEIVE)" in _warnings(items[1])["/data/webhookType"]
    by_path = accounts_items({"data": [transfer, untyped]}, "refund")
    assert [i.key for i in by_path] == [
        "accounts:TRANSFER:t-1:LIQUIDATED",
        "accounts:REFUND:u-1:LIQUIDATED",
    ]
    # An object without its key is kept beside the others; only a body none is read from
    # is refused, naming where in it the key is missing.
    keyless = {"status": "LIQUIDATED", "webhookType": "TRANSFER"}
    kept = accounts_items({"data": [keyless, receive]})
    assert [i.key.split(":")[0] for i in kept] == ["accounts", "unsupported"]
    with pytest.raises(PayloadInvalid) as refused:
        accounts_items({"data": [keyless]})
    assert (refused.value.violations or [{}])[0]["property"] == "/data/0"


def test_a_type_named_webhook_type_beside_data_is_read() -> None:
    """``{"webhookType": "TRANSFER", "data": {…}}``: the provider's own name for the type,
    put beside the object rather than in it. Kept as unsupported, the payout would never
    be matched."""
    data = {"id": "t-1", "status": "LIQUIDATED", "payment": {"amount": "5.00"}}
    (item,) = accounts_items({"webhookType": "transfer", "data": data})
    assert item.key == "accounts:TRANSFER:t-1:LIQUIDATED"
    assert _warnings(item) == {
        "/webhookType": "the notification's type as type (read from here); the type in"
        " capitals (read as TRANSFER)"
    }
    # ``type`` beside it still decides, as documented.
    (typed,) = accounts_items({"type": "RECEIVE", "webhookType": "TRANSFER", "data": data})
    assert typed.key == "accounts:RECEIVE:t-1:LIQUIDATED"
    (against,) = accounts_items({"webhookType": "TRANSFER", "data": data}, "receive")
    assert "the type the path names, RECEIVE" in _warnings(against)["/webhookType"]


def test_a_data_object_sent_as_json_text_is_read_as_the_object() -> None:
    """``"data": "{\\"id\\": …}"``: a sender that encoded the object once more. Its keys
    are readable; each item holds the object, the delivery the body as it came."""
    data = {"id": "t-1", "status": "LIQUIDATED", "payment": {"amount": "5.10"}}
    text = json.dumps(data)
    (item,) = accounts_items({"type": "TRANSFER", "data": text})
    assert item.key == "accounts:TRANSFER:t-1:LIQUIDATED"
    assert json.loads(item.payload)["data"] == {**data, "payment": {"amount": "5.10"}}
    held = "an object (it came as JSON text, read as the object it holds)"
    assert _warnings(item) == {"/data": held}
    # Its own type inside, an array of objects, under ``payload``: as ever, once read.
    inner = json.dumps([{**data, "webhookType": "RECEIVE"}, {**data, "id": "t-2"}])
    first, second = accounts_items({"payload": inner}, "transfer")
    assert [first.key, second.key] == [
        "accounts:RECEIVE:t-1:LIQUIDATED",
        "accounts:TRANSFER:t-2:LIQUIDATED",
    ]
    assert _warnings(second)["/payload"].startswith("the notification under data; ")
    # Text that holds no object, or nests deeper than a body may: kept whole, unsupported.
    for kept in ("LIQUIDATED", "{not json", "[" * 40 + "]" * 40, ""):
        (unsupported,) = accounts_items({"type": "TRANSFER", "data": kept})
        assert unsupported.status == "unsupported", kept
        assert _warnings(unsupported) == {"/data": "an object"}


@pytest.mark.parametrize("envelope", ["data", "payload"])
def test_pix_themselves_under_an_envelope_are_read_as_pix(envelope: str) -> None:
    first, second = pix(e2e=e2e_id(1)), pix(e2e=e2e_id(2))
    expected = f'{{"pix": [...]}}, one Pix object or an array of them, not under {envelope}'
    for body, keys in (
        ({envelope: [first, second]}, [f"pix:{e2e_id(1)}", f"pix:{e2e_id(2)}"]),
        ({envelope: first}, [f"pix:{e2e_id(1)}"]),
    ):
        items = pix_callback_items(body)
        assert [i.key for i in items] == keys
        assert all(_warnings(i) == {f"/{envelope}": expected} for i in items)
        assert json.loads(items[0].payload) == first
    # Nothing of a Pix under the envelope, or an accounts notification posted here: as ever.
    for other in ({envelope: {"ping": 1}}, {"type": "RECEIVE", envelope: first}):
        (item,) = pix_callback_items(other)
        assert item.status == "unsupported"


@pytest.mark.parametrize("beside_data", [False, True])
def test_a_word_no_type_of_the_providers_defers_to_the_paths_type(beside_data: bool) -> None:
    data = {**accounts_sample("transfer.json", "data").body["data"], "webhookType": "PIX_OUT"}
    body = {"webhookType": "PIX_OUT", "data": data} if beside_data else {"data": data}
    (item,) = accounts_items(body, "transfer")
    assert item.kind == "accounts.transfer"
    assert item.key == "accounts:TRANSFER:98765:LIQUIDATED"
    at = "/webhookType" if beside_data else "/data/webhookType"
    assert _warnings(item)[at] == "a notification type (read as TRANSFER, the path's)"
    # Without a type in the path the word is all there is: kept, under its name.
    (kept,) = accounts_items(body, None)
    assert kept.key.startswith("unsupported:PIX_OUT:")


def _respelt(document: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    return {names.get(name, name): value for name, value in document.items()}


@pytest.mark.parametrize(
    ("type_name", "data_name"),
    [("Type", "Data"), ("TYPE", "DATA"), (" type", "Payload"), ("type", "Data")],
)
def test_the_envelopes_names_spelt_otherwise_are_read_and_flagged(
    type_name: str, data_name: str
) -> None:
    """As a key missing under its documented name is read from another spelling of it, so
    are the envelope's ``type`` and ``data``: kept as unsupported, a TRANSFER would never
    reach its payout. Each is flagged where it came; the item keeps the body's names."""
    body = _respelt(_notification("transfer.json"), {"type": type_name, "data": data_name})
    (item,) = accounts_items(body)
    assert (item.key, item.status) == ("accounts:TRANSFER:98765:LIQUIDATED", "pending")
    assert json.loads(item.payload).keys() == body.keys()
    said = _warnings(item)
    if type_name != "type":
        assert said[f"/{type_name}"] == (
            "the notification type under its documented name, type (read from this one)"
        )
    assert "/type" not in said
    assert said[f"/{data_name}"] in (
        "the notification's object under its documented name, data (read from this one)",
        "the notification under data",
    )
    assert "/data" not in said
    # The item's references are found under the name it came with.
    assert "98765" in (item.refs or ())


def test_a_type_and_an_object_spelt_otherwise_are_read_wherever_they_come() -> None:
    data = {"Id": "t-1", "status": "LIQUIDATED", "payment": {"amount": "5.00"}}
    (own,) = accounts_items({"Data": {**data, "WebhookType": "RECEIVE"}})
    assert own.key == "accounts:RECEIVE:t-1:LIQUIDATED"
    assert "webhookType" in _warnings(own)["/Data/WebhookType"]
    (beside,) = accounts_items({"webhook_type": "RECEIVE", "data": data})
    assert beside.key == "accounts:RECEIVE:t-1:LIQUIDATED"
    assert "/webhook_type" in _warnings(beside)
    (flat,) = accounts_items({"Type": "TRANSFER", "Id": "f-1", "status": "LIQUIDATED"})
    assert flat.key == "accounts:TRANSFER:f-1:LIQUIDATED"
    listed = accounts_items([{"Type": "TRANSFER", "Data": data}, {"TYPE": "RECEIVE", "DATA": data}])
    assert [i.key for i in listed] == [
        "accounts:TRANSFER:t-1:LIQUIDATED",
        "accounts:RECEIVE:t-1:LIQUIDATED",
    ]
    # The documented names, when they hold something, are read as ever: nothing to flag.
    (documented,) = accounts_items({"type": "TRANSFER", "data": {**data, "id": "t-1"}, "Data": 1})
    assert documented.key == "accounts:TRANSFER:t-1:LIQUIDATED"
    assert not any(w.pointer.startswith(("/Data", "/type")) for w in documented.warnings)


def test_a_type_beside_data_its_object_contradicts_is_flagged() -> None:
    """``type`` beside ``data`` decides, as documented; where the object's own
    ``webhookType`` names another type the provider notifies, one of them is wrong, and the
    item says so. A word of another vocabulary, or the same type, is no disagreement."""
    data = {"id": "t-1", "status": "LIQUIDATED", "payment": {"amount": "5.00"}}
    (item,) = accounts_items({"type": "TRANSFER", "data": {**data, "webhookType": "RECEIVE"}})
    assert item.key == "accounts:TRANSFER:t-1:LIQUIDATED"
    assert _warnings(item) == {
        "/data/webhookType": "the type beside data, TRANSFER (read as that; this names RECEIVE)"
    }
    listed = accounts_items(
        {"type": "RECEIVE", "data": [{**data, "webhookType": "REFUND"}, {**data, "id": "t-2"}]}
    )
    assert "/data/webhookType" in _warnings(listed[0])
    assert "/data/webhookType" not in _warnings(listed[1])
    (beside,) = accounts_items(
        {"webhookType": "TRANSFER", "data": {**data, "webhookType": "receive"}}
    )
    assert "this names RECEIVE" in _warnings(beside)["/data/webhookType"]
    for own in ("TRANSFER", "transfer", "PIX_OUT"):
        (agreed,) = accounts_items({"type": "TRANSFER", "data": {**data, "webhookType": own}})
        assert "/data/webhookType" not in _warnings(agreed), own
