"""A fee the provider netted from a statement line (``feeAmount``) is stored exactly as
``statement_entry.fee_cents``; an absent or unreadable one is no fee, never a failure."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import Engine, select

from reconcile.db import session_scope
from reconcile.inbox import store_items
from reconcile.models import Source, StatementEntry
from reconcile.payloads.statement import statement_item
from reconcile.processing import process_items
from sandbox.accounts import create_accounts_app
from sandbox.accounts.statement import FeeBooking
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider
from tests.sandbox.sandbox_support import FakeClock, accounts_api

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def _line(**fields: Any) -> dict[str, Any]:
    line: dict[str, Any] = {
        "id": "PIX_IN-E12345678202611221500abcdefghijk",
        "type": "CREDIT",
        "category": "PIX_RECEIVED",
        "amount": Decimal("9.01"),
        "balanceAfter": Decimal("109.01"),
        "endToEndId": "E12345678202611221500abcdefghijk",
        "txId": "pedido1",
        "createdAt": "2026-11-22T15:00:00.000Z",
    }
    return {**line, **fields}


def _process(engine: Engine, lines: list[dict[str, Any]]) -> list[StatementEntry]:
    with session_scope(engine) as session:
        stored = store_items(session, [statement_item(line) for line in lines], source=Source.POLL)
    report = process_items(engine, stored.new_ids)
    assert report.processed == stored.new_ids
    with session_scope(engine) as session:
        rows = list(session.execute(select(StatementEntry)).scalars().all())
        session.expunge_all()
    return rows


def test_a_netted_line_stores_its_fee(engine: Engine) -> None:
    line = _line(feeAmount=Decimal("0.99"), grossAmount=Decimal("10.00"))
    (row,) = _process(engine, [line])
    assert (row.amount_cents, row.fee_cents, row.balance_after_cents) == (901, 99, 10901)
    assert (row.type, row.category, row.end_to_end_id) == (
        "CREDIT",
        "PIX_RECEIVED",
        line["endToEndId"],
    )


@pytest.mark.parametrize(
    ("fee", "cents"),
    [
        ("0.99", 99),
        (Decimal("1.5"), 150),
        (2, 200),
        ("0.00", 0),
        (None, None),
        ("abc", None),
        ("0.999", None),
        ("-0.99", None),
        (Decimal("0.001"), None),
        (True, None),
        ({"value": "0.99"}, None),
    ],
)
def test_a_fee_is_read_like_an_amount_and_tolerantly(
    engine: Engine, fee: object, cents: int | None
) -> None:
    (row,) = _process(engine, [_line(feeAmount=fee)])
    assert row.fee_cents == cents
    assert row.amount_cents == 901


def test_a_line_without_a_fee_has_none(engine: Engine) -> None:
    (row,) = _process(engine, [_line()])
    assert row.fee_cents is None


@pytest.mark.parametrize("booking", ["line", "netted"])
def test_the_sandboxs_fees_reach_the_statement_entries(engine: Engine, booking: FeeBooking) -> None:
    """Polled as pixrecon polls: the sandbox's lines, through its API client."""
    provider = SandboxProvider(
        seed=4, clock=FakeClock(T0), pix_received_fee=Decimal("0.99"), pix_fee_booking=booking
    )
    provider.receive_pix(Decimal("10.00"), txid="pedido1", horario=T0)
    provider.receive_pix(Decimal("0.50"), horario=T0 + timedelta(minutes=1))
    with (
        BackgroundServer(create_accounts_app(provider)) as server,
        accounts_api(server.url) as api,
    ):
        lines = list(api.iter_statement(T0 - timedelta(hours=1), T0 + timedelta(hours=1)))
    rows = _process(engine, lines)
    found = sorted((r.category, r.type, r.amount_cents, r.fee_cents) for r in rows)
    if booking == "netted":
        assert found == [("PIX_RECEIVED", "CREDIT", 0, 50), ("PIX_RECEIVED", "CREDIT", 901, 99)]
    else:
        assert found == [
            ("PIX_RECEIVED", "CREDIT", 50, None),
            ("PIX_RECEIVED", "CREDIT", 1000, None),
            ("PIX_RECEIVED_FEE", "DEBIT", 50, None),
            ("PIX_RECEIVED_FEE", "DEBIT", 99, None),
        ]
