"""The account's books: balance and statement from both API families, and notifications."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from sandbox.accounts import (
    AccountsWebhookDeliverer,
    cashout_notification,
    infraction_notification,
    notification_key,
    receive_notification,
    refund_notification,
    transfer_notification,
)
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider
from sandbox.webhooks import PixFault
from tests.sandbox.sandbox_support import Recipient

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


class SteppingClock:
    """A sandbox clock that moves one second per reading, so every event has its time."""

    def __init__(self) -> None:
        self.now = T0
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            self.now += timedelta(seconds=1)
            return self.now


@pytest.fixture
def provider() -> SandboxProvider:
    provider = SandboxProvider(seed=3, clock=SteppingClock())
    provider.accounts.opening_balance = Decimal("1000.00")
    return provider


def _signed(line: dict[str, Any]) -> Decimal:
    amount: Decimal = line["amount"]
    return amount if line["type"] == "CREDIT" else -amount


def test_balance_is_opening_plus_credits_minus_debits(provider: SandboxProvider) -> None:
    accounts = provider.accounts
    pix = provider.receive_pix(Decimal("500.00"), txid="pedido1")
    provider.receive_pix(Decimal("0.10"))
    provider.refund_pix(pix["endToEndId"], Decimal("50.00"))  # DEVOLVIDO: a debit
    provider.refund_pix(pix["endToEndId"], Decimal("5.00"), status="EM_PROCESSAMENTO")
    accounts.create_payment("pay-1", Decimal("200.00"), pix_key="a@example.com")
    accounts.create_payment("pay-2", Decimal("70.00"), pix_key="b@example.com")
    accounts.create_payment("pay-3", Decimal("9.99"), pix_key="c@example.com")
    accounts.settle_payment("pay-1")
    accounts.reject_payment("pay-2")
    accounts.refund_payment("pay-1", Decimal("20.00"))
    case = accounts.open_infraction(pix["endToEndId"], Decimal("100.00"))
    accounts.close_infraction(case["id"], debit=True)
    other = accounts.open_infraction(pix["endToEndId"], Decimal("1.00"))
    accounts.close_infraction(other["id"], debit=False)

    expected = (
        Decimal("1000.00")
        + (Decimal("500.10") + Decimal("20.00"))
        - (Decimal("50.00") + Decimal("200.00") + Decimal("100.00"))
    )
    assert accounts.balance() == expected == Decimal("1170.10")

    lines = accounts.statement()
    assert [line["category"] for line in lines] == [
        "PIX_RECEIVED",
        "PIX_RECEIVED",
        "PIX_REFUND_SENT",
        "PIX_PAYMENT",
        "PIX_PAYMENT_REFUND",
        "INFRACTION_DEBIT",
    ]
    assert accounts.opening_balance + sum(map(_signed, lines)) == accounts.balance()
    assert lines[-1]["balanceAfter"] == accounts.balance()
    running = accounts.opening_balance
    for line in lines:
        running += _signed(line)
        assert line["balanceAfter"] == running
    assert lines[3]["idempotencyKey"] == "pay-1"
    assert lines[5]["infractionId"] == case["id"]
    assert lines[5]["originalEndToEndId"] == pix["endToEndId"]


def test_statement_window_is_half_open(provider: SandboxProvider) -> None:
    first = provider.receive_pix(Decimal("1.00"), horario=T0 + timedelta(hours=1))
    second = provider.receive_pix(Decimal("2.00"), horario=T0 + timedelta(hours=2))
    window = provider.accounts.statement(T0 + timedelta(hours=1), T0 + timedelta(hours=2))
    assert [line["endToEndId"] for line in window] == [first["endToEndId"]]
    # A Pix booked later with an earlier horario slots in before, shifting balances after.
    provider.receive_pix(Decimal("4.00"), horario=T0)
    later = provider.accounts.statement(T0 + timedelta(hours=2), T0 + timedelta(hours=3))
    assert later[0]["endToEndId"] == second["endToEndId"]
    assert later[0]["balanceAfter"] == Decimal("1007.00")


# -- Notifications -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def recipient() -> Iterator[tuple[Recipient, str]]:
    recipient = Recipient()
    with BackgroundServer(recipient.app) as server:
        yield recipient, server.url


def test_notifications_follow_the_fault_plan(
    provider: SandboxProvider, recipient: tuple[Recipient, str]
) -> None:
    target, url = recipient
    target.deliveries.clear()
    accounts = provider.accounts
    for kind in ("TRANSFER", "RECEIVE", "REFUND", "CASHOUT", "INFRACTION"):
        accounts.directory.register_webhook(
            kind, f"{url}/webhooks/accounts/{kind.lower()}", "X-Webhook-Secret", "s3cret"
        )
    pix = provider.receive_pix(Decimal("42.00"), txid="pedido45")
    accounts.create_payment("pay-1", Decimal("250.50"), pix_key="f@example.com")
    accounts.settle_payment("pay-1")
    accounts.create_payment("pay-2", Decimal("1.00"), pix_key="g@example.com")
    accounts.reject_payment("pay-2")
    case = accounts.open_infraction(pix["endToEndId"], Decimal("42.00"))
    transfer = transfer_notification(accounts, "pay-1")
    accounts.refund_payment("pay-1", Decimal("0.50"))
    notifications = [
        transfer,
        receive_notification(accounts, pix["endToEndId"]),
        refund_notification(accounts, "pay-1"),
        cashout_notification(accounts, "pay-2"),
        infraction_notification(accounts, case["id"]),
    ]
    plan = {
        notification_key(notifications[1]): PixFault.duplicate(3),
        notification_key(notifications[2]): PixFault.drop(),
    }
    with AccountsWebhookDeliverer(accounts.directory) as deliverer:
        report = deliverer.deliver(notifications, plan)

    assert (report.delivered, report.copies_delivered, report.dropped) == (4, 6, 1)
    assert report.duplicates_sent == 2
    seen = Counter(d.body["type"] for d in target.deliveries)
    assert seen == Counter({"RECEIVE": 3, "TRANSFER": 1, "CASHOUT": 1, "INFRACTION": 1})
    assert all(d.headers["x-webhook-secret"] == "s3cret" for d in target.deliveries)
    by_type = {d.body["type"]: d for d in target.deliveries}
    assert by_type["TRANSFER"].path == "/webhooks/accounts/transfer"
    assert by_type["TRANSFER"].body["data"]["payment"]["amount"] == 250.5
    assert by_type["RECEIVE"].body["data"]["txId"] == "pedido45"
    assert by_type["CASHOUT"].body["errorCode"] == "AC03"
    assert set(by_type["CASHOUT"].body["data"]) == {
        "status",
        "message",
        "createdAt",
        "endToEndId",
        "idempotencyKey",
    }
    assert "endToEndId" not in by_type["INFRACTION"].body["data"]


def test_unregistered_types_are_not_sent(provider: SandboxProvider) -> None:
    pix = provider.receive_pix(Decimal("1.00"))
    with AccountsWebhookDeliverer(provider.accounts.directory) as deliverer:
        report = deliverer.deliver([receive_notification(provider.accounts, pix["endToEndId"])])
    assert (report.unregistered, report.requests_sent) == (1, 0)
