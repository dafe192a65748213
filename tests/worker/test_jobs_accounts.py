"""The accounts side of the poller and of confirmation, against the sandbox over HTTP:
payouts whose notification never came, the statement, the balance, infractions, and a
forged TRANSFER."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import Engine, select
from sqlmodel import SQLModel

from pixrecon.node import Node
from pixrecon.sandbox_wiring import sandbox_servers
from reconcile.db import session_scope
from reconcile.inbox import dump_json
from reconcile.models import AccountMovement, BalanceSnapshot, Infraction, StatementEntry
from sandbox.accounts.notifications import transfer_notification
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider
from tests.conftest import RunningNode, make_settings


@pytest.fixture
def provider() -> SandboxProvider:
    return SandboxProvider(seed=11)


@pytest.fixture
def node(engine: Engine, provider: SandboxProvider) -> Iterator[RunningNode]:
    with sandbox_servers(provider) as urls:
        settings = make_settings(
            engine.url.render_as_string(hide_password=False),
            **urls.fields(),
            scheduler_enabled=False,
            confirm_grace_seconds=0.001,
        )
        with Node(settings, engine) as running, BackgroundServer(running.app) as server:
            yield RunningNode(running, server)


def _post(node: RunningNode, body: dict[str, Any]) -> int:
    # The sandbox builds notifications with exact Decimal amounts.
    response = node.http.post(
        "/webhooks/accounts", content=dump_json(body), headers={"content-type": "application/json"}
    )
    return response.status_code


def _rows(engine: Engine, model: type[SQLModel]) -> list[Any]:
    with session_scope(engine) as session:
        return list(session.execute(select(model)).scalars())


def test_payout_settled_without_notification_is_found_by_polling(
    node: RunningNode, provider: SandboxProvider
) -> None:
    provider.accounts.create_payment("payout-1", Decimal("80.00"), pix_key="fornecedor@ex.com")
    processing = transfer_notification(provider.accounts, "payout-1")
    assert _post(node, processing) == 200
    node.wait_processed()
    provider.accounts.settle_payment("payout-1")  # …and its notification is lost

    node.node.runtime.jobs.poll_accounts()
    node.wait_processed()

    (movement,) = _rows(node.node.engine, AccountMovement)
    assert (movement.status, movement.amount_cents) == ("LIQUIDATED", 8000)
    assert movement.confirmation == "confirmed"  # the API itself reported it


def test_statement_balance_and_infractions_are_polled(
    node: RunningNode, provider: SandboxProvider
) -> None:
    pix = provider.receive_pix(Decimal("150.00"))
    provider.accounts.create_payment("payout-2", Decimal("40.00"), pix_key="x@ex.com")
    provider.accounts.settle_payment("payout-2")
    provider.accounts.open_infraction(pix["endToEndId"], Decimal("150.00"))

    node.node.runtime.jobs.poll_accounts()
    node.wait_processed()

    entries = _rows(node.node.engine, StatementEntry)
    credits = sum(e.amount_cents for e in entries if e.type == "CREDIT")
    debits = sum(e.amount_cents for e in entries if e.type == "DEBIT")
    (snapshot,) = _rows(node.node.engine, BalanceSnapshot)
    expected = int(provider.accounts.balance() * 100)
    opening = int(provider.accounts.opening_balance * 100)
    assert snapshot.available_cents == expected
    assert opening + credits - debits == expected
    (infraction,) = _rows(node.node.engine, Infraction)
    assert (infraction.status, infraction.amount_cents) == ("OPEN", 15000)

    # Polling again overlaps the window: nothing is stored twice.
    node.node.runtime.jobs.poll_accounts()
    node.wait_processed()
    assert len(_rows(node.node.engine, StatementEntry)) == len(entries)


def test_forged_transfer_is_flagged_and_real_one_confirmed(
    node: RunningNode, provider: SandboxProvider
) -> None:
    provider.accounts.create_payment("payout-3", Decimal("12.34"), pix_key="y@ex.com")
    provider.accounts.settle_payment("payout-3")
    real = transfer_notification(provider.accounts, "payout-3")
    forged = {
        "type": "TRANSFER",
        "data": dict(
            real["data"],
            id=999999,
            idempotencyKey="nope",
            endToEndId="E99999008202611221200forged00001",
        ),
    }
    tampered_key = "payout-4"
    provider.accounts.create_payment(tampered_key, Decimal("1.00"), pix_key="z@ex.com")
    provider.accounts.settle_payment(tampered_key)
    tampered = transfer_notification(provider.accounts, tampered_key)
    tampered["data"]["payment"] = {"currency": "BRL", "amount": "1000.00"}
    for body in (real, forged, tampered):
        assert _post(node, body) == 200
    node.wait_processed()

    node.node.runtime.jobs.confirm()

    by_key = {m.idempotency_key: m for m in _rows(node.node.engine, AccountMovement)}
    assert by_key["payout-3"].confirmation == "confirmed"
    assert by_key["nope"].confirmation == "unconfirmed_webhook"
    assert by_key[tampered_key].confirmation == "amount_mismatch"
    assert by_key[tampered_key].confirmed_amount_cents == 100


def test_a_payout_notified_canceled_after_it_settled_keeps_what_the_api_states(
    node: RunningNode, provider: SandboxProvider
) -> None:
    """A notification with the payout's own ``id`` and another outcome replaces its row
    (an outcome ranks alike whatever it is); the look-up keeps beside it what the API
    states, for the day to count."""
    provider.accounts.create_payment("payout-5", Decimal("12.34"), pix_key="y@ex.com")
    provider.accounts.settle_payment("payout-5")
    real = transfer_notification(provider.accounts, "payout-5")
    assert _post(node, real) == 200
    node.wait_processed()
    node.node.runtime.jobs.confirm()
    forged = {"type": "TRANSFER", "data": dict(real["data"], status="CANCELED")}
    assert _post(node, forged) == 200
    node.wait_processed()

    node.node.runtime.jobs.confirm()

    (row,) = _rows(node.node.engine, AccountMovement)
    assert (row.status, row.confirmation) == ("CANCELED", "status_mismatch")
    assert (row.confirmed_status, row.confirmed_amount_cents) == ("LIQUIDATED", 1234)
