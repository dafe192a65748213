from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from reconcile.masking import mask_document, mask_text, mask_value
from reconcile.money import InvalidAmount, from_cents, parse_amount, to_cents
from reconcile.timeutil import business_day_bounds, parse_timestamp


@pytest.mark.parametrize(
    ("raw", "cents"),
    [
        ("110.00", 11000),
        (Decimal("0.1"), 10),
        (7, 700),
        ("0.01", 1),
        # Exact in any notation: Java's BigDecimal writes 150 as 1.5E+2.
        ("1e2", 10000),
        ("1.5E+2", 15000),
        ("110.000", 11000),
        (Decimal("1.5E+2"), 15000),
    ],
)
def test_amounts_are_exact(raw: object, cents: int) -> None:
    assert to_cents(parse_amount(raw)) == cents


@pytest.mark.parametrize(
    "raw",
    [
        0.1,
        "1.001",
        "abc",
        "NaN",
        True,
        None,
        "1,00",
        "1e-3",
        " 1.00",
        Decimal("1e999999"),
        Decimal("NaN"),
        "12345678901.00",
        "1" * 65,
    ],
)
def test_bad_amounts_are_refused(raw: object) -> None:
    with pytest.raises(InvalidAmount):
        parse_amount(raw)


def test_cents_round_trip() -> None:
    assert from_cents(11010) == Decimal("110.10")


def test_timestamps_with_offsets_become_utc() -> None:
    assert parse_timestamp("2026-11-22T15:00:00.123-03:00") == datetime(
        2026, 11, 22, 18, 0, 0, 123000, tzinfo=UTC
    )
    assert parse_timestamp("2026-11-22T18:00:00Z") == datetime(2026, 11, 22, 18, tzinfo=UTC)
    assert parse_timestamp("2020-02-30T10:00:00Z") is None
    # Outside what an aware instant can hold, once moved to UTC.
    assert parse_timestamp("0001-01-01T00:00:00+01:00") is None
    assert parse_timestamp("9999-12-31T23:59:59-01:00") is None


def test_business_day_is_a_sao_paulo_calendar_day() -> None:
    start, end = business_day_bounds(date(2026, 11, 22))
    assert start == datetime(2026, 11, 22, 3, tzinfo=UTC)
    assert end == datetime(2026, 11, 23, 3, tzinfo=UTC)


def test_documents_and_names_are_masked() -> None:
    assert mask_document("123.456.789-09") == "*********09"
    assert "12345678909" not in mask_text("pagador 12345678909 pagou")
    masked = mask_value("pagador", {"cpf": "12345678909", "nome": "Fulana de Tal"})
    assert masked == {"cpf": "*********09", "nome": "F***** d* T**"}


def test_a_document_typed_with_spaces_into_free_text_is_masked_too() -> None:
    for typed in ("123 456 789 09", "123.456.789 09", "12.345.678 0001-95", "12 345 678 0001 95"):
        masked = mask_text(f"o pagador ({typed}) ligou")
        assert masked.endswith(f"{typed[-2:]}) ligou"), masked
        assert not any(group in masked for group in ("456", "345")), masked
    # Numbers of other shapes are left alone: a phone, amounts, a date.
    for other in (
        "ligar 11 98765 4321",
        "R$ 1.234,56 em 27/11/2026",
        "pedido 2026 11 27 123",
        # Eleven digits with decimals are an amount, not a CPF.
        "'10000000000.00' is above the largest Pix amount",
    ):
        assert mask_text(other) == other
    assert mask_text("CPF 123.456.789-09.") == "CPF *********09."


def test_masking_a_masked_document_keeps_it_as_it_is() -> None:
    """Retention stores masked documents; showing them masks again, and must not lose the
    two digits that tell records apart."""
    from reconcile.masking import mask_document

    for document in ("12345678909", "12.345.678/0001-90"):
        once = mask_document(document)
        assert mask_document(once) == once
        assert once.endswith(document[-2:])
