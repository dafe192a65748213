"""A Pix callback written as the BCB documents it is read without the tolerant models
(reconcile/payloads/pix.py, ``_as_documented``), and so is a stored Pix by the workers
(reconcile/handlers/pix.py, ``pix_fields``). Those shortcuts must give exactly the items,
keys, payloads, warnings and references, and the row's fields, the tolerant reading gives,
for every body: they only decide which of the two does the work."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconcile.handlers.common import PermanentItemError
from reconcile.handlers.pix import pix_fields, tolerant_pix_fields
from reconcile.models import ItemKind
from reconcile.payloads import PayloadInvalid
from reconcile.payloads.pix import is_documented, pix_callback_items, read_tolerantly

E2E = "E12345678202611281000abcdefghijk"

# Each field: its documented forms, and the near misses senders make of them.
DOCUMENTED: dict[str, st.SearchStrategy[Any]] = {
    "endToEndId": st.from_regex(r"E[0-9]{8}2026112[0-9]{5}[a-zA-Z0-9]{11}", fullmatch=True),
    "txid": st.from_regex(r"[a-zA-Z0-9]{1,35}", fullmatch=True),
    "valor": st.from_regex(r"[0-9]{1,10}\.[0-9]{2}", fullmatch=True),
    "horario": st.sampled_from(["2026-11-28T10:00:00.000Z", "2026-11-28T23:59:59-03:00"]),
    "chave": st.text(max_size=77).filter(lambda text: "\x00" not in text),
    "infoPagador": st.text(max_size=20).filter(lambda text: "\x00" not in text),
}
NEAR_MISSES: dict[str, list[Any]] = {
    "endToEndId": [E2E + "\n", f" {E2E}", "\ufeff" + E2E, E2E[:31], E2E + "x", "", None, 12],
    "txid": ["a" * 36, "tx-1", "", None, 7, "tx1\n"],
    "valor": [
        *("1.5E+2", "110.000", "110.0", "110", "-1.00", "99999999999.00", "1,00", " 1.00"),
        *(Decimal("110.00"), 110, None, "", "abc", True),
    ],
    "horario": [
        *("2026-11-28T10:00:00", "2026-11-28", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"),
        *("28/11/2026 10:00", "2026-11-28T10:00:00.000Z" + " " * 50, "", None, 1764324000),
    ],
    "chave": ["x" * 78, "a\x00b", None, 5],
    "infoPagador": ["pedido\x00", "caf\ufffd", None, 3],
    "pagador": [{"nome": "Fulano"}],
    "devolucoes": [[], {"id": "d1", "status": "DEVOLVIDO"}],
    "componentesValor": [{"original": {"valor": "1.00"}}],
    "end_to_end_id": [E2E],
    "gnExtras": ["x"],
}


@st.composite
def pix(draw: st.DrawFn) -> dict[str, Any]:
    """A Pix as documented, then none, one or two of its fields missing or written
    otherwise: every case the shortcut must tell apart lies next to the documented one."""
    optional = draw(st.sets(st.sampled_from(["txid", "chave", "infoPagador"])))
    found = {name: draw(DOCUMENTED[name]) for name in DOCUMENTED if name not in optional}
    for _ in range(draw(st.integers(0, 2))):
        name = draw(st.sampled_from(sorted(NEAR_MISSES)))
        if draw(st.integers(0, 5)) == 0:
            found.pop(name, None)
        else:
            found[name] = draw(st.sampled_from(NEAR_MISSES[name]))
    return found


bodies = st.one_of(
    st.builds(lambda items: {"pix": items}, st.lists(pix(), max_size=3)),
    st.builds(lambda item: {"pix": item}, pix()),
    st.builds(lambda items: {"pix": items, "x": 1}, st.lists(pix(), min_size=1, max_size=2)),
    st.lists(pix(), min_size=1, max_size=2),
    pix(),
)


def _read(read: Any, body: Any) -> Any:
    try:
        return read(body)
    except PayloadInvalid as exc:
        return ("refused", exc.detail, exc.violations)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies)
def test_every_body_reads_as_the_tolerant_models_read_it(body: Any) -> None:
    _read_alike(body)


def _read_alike(body: Any) -> None:
    shortcut, tolerant = _read(pix_callback_items, body), _read(read_tolerantly, body)
    assert shortcut == tolerant
    if isinstance(shortcut, list):
        # The amount a repeat is compared by, which the shortcut gives without reading
        # the payload again.
        assert [i.digest() for i in shortcut] == [i.digest() for i in tolerant]


def _fields(read: Any, raw: Any) -> Any:
    try:
        return read(raw)
    except PermanentItemError as exc:
        return ("failed", str(exc))


def _rows_read_alike(body: Any) -> None:
    """Each stored Pix of ``body``, read back as a worker reads it, gives the same row
    fields either way."""
    try:
        items = read_tolerantly(body)
    except PayloadInvalid:
        return
    for item in items:
        if item.kind == ItemKind.PIX.value:
            raw = json.loads(item.payload, parse_float=Decimal)
            assert _fields(pix_fields, raw) == _fields(tolerant_pix_fields, raw)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies)
def test_every_stored_pix_makes_the_row_the_tolerant_model_makes(body: Any) -> None:
    _rows_read_alike(body)


PLAIN = {
    "endToEndId": E2E,
    "txid": "cob123",
    "valor": "110.00",
    "horario": "2026-11-28T10:00:00.000Z",
    "chave": "7d9f0335-8dcc-4054-9bf9-0dbd61d36906",
    "infoPagador": "pedido 123",
}


@pytest.mark.parametrize(
    ("name", "value"), [(name, value) for name, values in NEAR_MISSES.items() for value in values]
)
def test_each_near_miss_reads_as_the_tolerant_models_read_it(name: str, value: Any) -> None:
    body = {"pix": [{**PLAIN, name: value}]}
    _read_alike(body)
    _rows_read_alike(body)


def test_the_documented_pix_takes_the_shortcut_and_keeps_every_field() -> None:
    (item,) = pix_callback_items({"pix": [PLAIN]})
    raw = json.loads(item.payload, parse_float=Decimal)
    assert is_documented(raw)
    fields = pix_fields(raw)
    assert fields == tolerant_pix_fields(raw)
    assert (fields.end_to_end_id, fields.valor, fields.chave) == (
        E2E,
        Decimal("110.00"),
        PLAIN["chave"],
    )


@pytest.mark.parametrize(
    "pix_fields",
    [
        {"endToEndId": E2E, "valor": "110.00", "horario": "2026-11-28T10:00:00.000Z"},
        {
            "endToEndId": E2E,
            "txid": "cob123",
            "valor": "0.01",
            "horario": "2026-11-28T23:59:59-03:00",
            "chave": "7d9f0335-8dcc-4054-9bf9-0dbd61d36906",
            "infoPagador": "pedido caf\ufffd",
        },
    ],
)
def test_documented_pix_keep_their_keys_and_references(pix_fields: dict[str, Any]) -> None:
    (item,) = pix_callback_items({"pix": [pix_fields]})
    assert item == read_tolerantly({"pix": [pix_fields]})[0]
    assert item.key == f"pix:{E2E}"
    assert E2E in (item.refs or ())
