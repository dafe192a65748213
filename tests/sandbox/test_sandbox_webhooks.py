"""Webhook delivery with faults, to a recording receiver over real HTTP."""

from __future__ import annotations

import random
import socket
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider
from sandbox.webhooks import BodyShape, FaultAction, PixFault, WebhookDeliverer, random_plan
from tests.sandbox.sandbox_support import Recipient


@pytest.fixture(scope="module")
def recipient_server() -> Iterator[tuple[Recipient, BackgroundServer]]:
    recipient = Recipient()
    with BackgroundServer(recipient.app) as server:
        yield recipient, server


@pytest.fixture
def recipient(recipient_server: tuple[Recipient, BackgroundServer]) -> Recipient:
    recipient_server[0].reset()
    return recipient_server[0]


@pytest.fixture
def webhook_url(recipient_server: tuple[Recipient, BackgroundServer]) -> str:
    return recipient_server[1].url + "/webhooks/qrcode"


def _pix(count: int, *, txid: bool = True) -> list[dict[str, Any]]:
    provider = SandboxProvider(seed=4)
    base = datetime(2024, 6, 1, tzinfo=UTC)
    return [
        provider.receive_pix(
            Decimal("10.00") + i,
            txid=f"tx{i:030d}" if txid else None,
            horario=base + timedelta(seconds=i),
        )
        for i in range(count)
    ]


def _deliverer(url: str, **options: Any) -> WebhookDeliverer:
    options.setdefault("retry_delay", 0.0)
    return WebhookDeliverer(url, **options)


def test_each_pix_is_posted_to_the_pix_path_with_the_secret(
    recipient: Recipient, webhook_url: str
) -> None:
    pix = _pix(3)
    with _deliverer(webhook_url + "/", secret_header="X-Webhook-Secret", secret="s3") as sender:
        report = sender.deliver(pix)

    assert report.requests_sent == 3
    assert report.pix_delivered == 3
    assert report.duplicates_sent == 0
    assert [d.path for d in recipient.deliveries] == ["/webhooks/qrcode/pix"] * 3
    assert [d.body for d in recipient.deliveries] == [{"pix": [p]} for p in pix]
    assert all(d.headers["x-webhook-secret"] == "s3" for d in recipient.deliveries)
    assert all(d.headers["content-type"] == "application/json" for d in recipient.deliveries)


def test_fault_plan_drops_and_duplicates(recipient: Recipient, webhook_url: str) -> None:
    pix = _pix(5)
    dropped, tripled = pix[1]["endToEndId"], pix[3]["endToEndId"]
    plan = {dropped: PixFault.drop(), tripled: PixFault.duplicate(3)}

    with _deliverer(webhook_url) as sender:
        report = sender.deliver(pix, plan)

    assert report.dropped == 1
    assert report.duplicates_sent == 2
    assert report.pix_delivered == 4
    assert report.copies_delivered == 6
    assert report.requests_sent == 6
    assert report.undelivered == []
    received = recipient.pix_ids()
    assert dropped not in received
    assert received[tripled] == 3
    assert sum(received.values()) == 6
    # Repeats come after every first copy, each in a request of its own.
    assert [d.body["pix"][0]["endToEndId"] for d in recipient.deliveries[-2:]] == [tripled] * 2


def test_pix_are_batched_into_one_post(recipient: Recipient, webhook_url: str) -> None:
    pix = _pix(7)
    with _deliverer(webhook_url, batch_size=3) as sender:
        report = sender.deliver(pix)

    assert report.requests_sent == 3
    assert [len(d.body["pix"]) for d in recipient.deliveries] == [3, 3, 1]
    assert [p for d in recipient.deliveries for p in d.body["pix"]] == pix


def test_non_2xx_answers_are_retried_with_backoff(recipient: Recipient, webhook_url: str) -> None:
    recipient.script.extend([500, 503])
    sleeps: list[float] = []
    with _deliverer(webhook_url, retry_delay=0.5, sleep=sleeps.append) as sender:
        report = sender.deliver(_pix(2))

    assert report.non_2xx_responses == 2
    assert report.requests_sent == 4
    assert report.pix_delivered == 2
    assert report.statuses == [500, 503, 200, 200]
    assert sleeps == [0.5, 1.0]


def test_exhausted_retries_leave_pix_undelivered(recipient: Recipient, webhook_url: str) -> None:
    pix = _pix(2)
    recipient.script.extend([500, 500])
    with _deliverer(webhook_url, max_attempts=2) as sender:
        report = sender.deliver(pix)

    assert report.undelivered == [pix[0]["endToEndId"]]
    assert report.pix_delivered == 1
    assert report.non_2xx_responses == 2


def test_connection_errors_are_counted_and_retried() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    pix = _pix(1)
    with _deliverer(f"http://127.0.0.1:{port}/hook", max_attempts=3) as sender:
        report = sender.deliver(pix)

    assert report.connection_errors == 3
    assert report.requests_sent == 3
    assert report.undelivered == [pix[0]["endToEndId"]]


def test_pix_without_txid_are_not_notified_unless_asked(
    recipient: Recipient, webhook_url: str
) -> None:
    pix = _pix(2, txid=False)
    with _deliverer(webhook_url) as sender:
        assert sender.deliver(pix).skipped_without_txid == 2
    assert recipient.deliveries == []

    with _deliverer(webhook_url, notify_without_txid=True) as sender:
        assert sender.deliver(pix).pix_delivered == 2


@pytest.mark.parametrize(
    ("shape", "batch_size", "expected"),
    [
        (BodyShape.SINGLE_OBJECT, 1, lambda p: {"pix": p[0]}),
        (BodyShape.FLAT, 1, lambda p: p[0]),
        (BodyShape.ARRAY, 2, lambda p: p),
    ],
)
def test_non_standard_body_shapes(
    recipient: Recipient, webhook_url: str, shape: BodyShape, batch_size: int, expected: Any
) -> None:
    pix = _pix(2)[:batch_size]
    with _deliverer(webhook_url, shape=shape, batch_size=batch_size) as sender:
        sender.deliver(pix)
    assert recipient.deliveries[0].body == expected(pix)


def test_single_item_shapes_refuse_batches() -> None:
    with pytest.raises(ValueError, match="one Pix"):
        WebhookDeliverer("http://127.0.0.1:1", shape=BodyShape.FLAT, batch_size=2)


def test_random_plans_and_shuffles_are_reproducible(recipient: Recipient, webhook_url: str) -> None:
    pix = _pix(40)
    plan = random_plan(pix, random.Random(42), drop_rate=0.2, duplicate_rate=0.2)
    assert plan == random_plan(pix, random.Random(42), drop_rate=0.2, duplicate_rate=0.2)
    actions = Counter(fault.action for fault in plan.values())
    assert actions[FaultAction.DROP] > 0
    assert actions[FaultAction.DUPLICATE] > 0

    orders = []
    for _ in range(2):
        recipient.reset()
        with _deliverer(webhook_url, shuffle=True, rng=random.Random(5)) as sender:
            report = sender.deliver(pix, plan)
        orders.append([d.body["pix"][0]["endToEndId"] for d in recipient.deliveries])
        assert report.dropped == actions[FaultAction.DROP]
        assert report.pix_delivered == len(pix) - actions[FaultAction.DROP]
    assert orders[0] == orders[1]
    assert orders[0][: len(pix) - actions[FaultAction.DROP]] != [
        p["endToEndId"] for p in pix if plan[p["endToEndId"]].action is not FaultAction.DROP
    ]
