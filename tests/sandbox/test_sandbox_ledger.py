"""The sandbox's ledger: identifiers, amounts and payers of the Pix it books."""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from sandbox.ids import new_cpf
from sandbox.ledger import PixQuery
from sandbox.state import SandboxProvider

E2E_RE = re.compile(r"E(\d{8})(\d{12})([A-Za-z0-9]{11})")


def _cpf_is_valid(cpf: str) -> bool:
    digits = [int(c) for c in cpf]
    for size in (9, 10):
        total = sum(d * w for d, w in zip(digits[:size], range(size + 1, 1, -1), strict=True))
        check = total * 10 % 11 % 10
        if digits[size] != check:
            return False
    return True


def test_end_to_end_ids_have_the_spi_layout_and_are_unique() -> None:
    provider = SandboxProvider(seed=7, ispb="12345678")
    at = datetime(2024, 3, 5, 22, 41, 59, tzinfo=timezone(timedelta(hours=-3)))
    ids = [provider.receive_pix(Decimal("1.00"), horario=at)["endToEndId"] for _ in range(2000)]

    assert len(set(ids)) == len(ids)
    for e2eid in ids:
        match = E2E_RE.fullmatch(e2eid)
        assert match is not None, e2eid
        assert match.group(1) == "12345678"
        # The timestamp part is UTC: 22:41 at -03:00 is 01:41 the next day.
        assert match.group(2) == "202403060141"


def test_the_same_seed_books_the_same_identifiers() -> None:
    at = datetime(2024, 1, 1, tzinfo=UTC)
    first = SandboxProvider(seed=3).receive_pix(Decimal("5.00"), horario=at)
    second = SandboxProvider(seed=3).receive_pix(Decimal("5.00"), horario=at)
    assert first == second


def test_a_received_pix_has_the_bcb_shape() -> None:
    provider = SandboxProvider(seed=1, pix_key="chave@example.com")
    pix = provider.receive_pix(
        Decimal("110"),
        txid="abc123",
        payer_cnpj="12345678000195",
        payer_name="Empresa SA",
        info_pagador="pedido 42",
        horario=datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC),
    )
    assert pix == {
        "endToEndId": pix["endToEndId"],
        "txid": "abc123",
        "valor": "110.00",
        "componentesValor": {"original": {"valor": "110.00"}},
        "chave": "chave@example.com",
        "horario": "2024-05-01T12:00:00.123Z",
        "infoPagador": "pedido 42",
        "pagador": {"cnpj": "12345678000195", "nome": "Empresa SA"},
    }
    assert provider.get_pix(pix["endToEndId"]) == pix


def test_optional_fields_are_omitted_and_a_valid_cpf_is_made_up() -> None:
    pix = SandboxProvider(seed=2).receive_pix(Decimal("0.01"))
    assert "txid" not in pix
    assert "infoPagador" not in pix
    assert _cpf_is_valid(pix["pagador"]["cpf"])


def test_generated_cpfs_have_valid_check_digits() -> None:
    rng = random.Random(11)
    assert all(_cpf_is_valid(new_cpf(rng)) for _ in range(500))


@pytest.mark.parametrize(
    ("amount", "error"),
    [
        (1.5, TypeError),
        (Decimal("1.005"), ValueError),
        (Decimal("0"), ValueError),
        (Decimal("-1.00"), ValueError),
        (Decimal("NaN"), ValueError),
        (Decimal("10000000000.00"), ValueError),
    ],
)
def test_inexact_or_impossible_amounts_are_refused(amount: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        SandboxProvider().receive_pix(amount)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"txid": "has-dash"},
        {"txid": "x" * 36},
        {"txid": ""},
        {"payer_cpf": "123"},
        {"payer_cpf": "12345678909", "payer_cnpj": "12345678000195"},
        {"info_pagador": "x" * 141},
        {"horario": datetime(2024, 1, 1)},
    ],
)
def test_invalid_pix_fields_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"."):
        SandboxProvider().receive_pix(Decimal("1.00"), **kwargs)  # type: ignore[arg-type]


def test_query_is_inclusive_and_ordered_by_horario_then_id() -> None:
    provider = SandboxProvider(seed=5)
    base = datetime(2024, 6, 1, 12, tzinfo=UTC)
    for offset in (3, 0, 2, 1, 2):
        provider.receive_pix(Decimal("1.00"), horario=base + timedelta(seconds=offset))

    page = provider.query_pix(
        PixQuery(base + timedelta(seconds=1), base + timedelta(seconds=2)), page=0, per_page=10
    )
    keys = [(p["horario"], p["endToEndId"]) for p in page.items]
    assert page.total == 3
    assert keys == sorted(keys)
    assert {p["horario"] for p in page.items} == {
        "2024-06-01T12:00:01.000Z",
        "2024-06-01T12:00:02.000Z",
    }


def test_refunds_are_bounded_by_the_pix_amount() -> None:
    provider = SandboxProvider(seed=9)
    e2eid = provider.receive_pix(Decimal("10.00"), txid="t1")["endToEndId"]
    refund = provider.refund_pix(e2eid, Decimal("4.00"), refund_id="r1", status="EM_PROCESSAMENTO")
    assert re.fullmatch(r"D\d{20}[A-Za-z0-9]{11}", refund["rtrId"])
    assert "liquidacao" not in refund["horario"]

    with pytest.raises(ValueError, match="exceed"):
        provider.refund_pix(e2eid, Decimal("6.01"))
    settled = provider.settle_refund(e2eid, "r1")
    assert settled["status"] == "DEVOLVIDO"
    assert "liquidacao" in settled["horario"]
    pix = provider.get_pix(e2eid)
    assert pix is not None
    assert [r["id"] for r in pix["devolucoes"]] == ["r1"]
