"""Deliver accounts notifications to the URLs registered per type, with scripted faults.

The provider POSTs ``{"type": T, "data": {...}}`` to the URL registered for T, as is (no
suffix), with the secret header given at registration. The fault plan is the QR side's
(``PixFault``: deliver, duplicate, drop), keyed by ``notification_key``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from sandbox.accounts.directory import Directory
from sandbox.accounts.jsonio import dumps
from sandbox.accounts.notifications import notification_key
from sandbox.delivery import RetryingSender, send_in_rounds
from sandbox.webhooks import PixFault


@dataclass
class NotificationReport:
    """What the sender knows happened; a receiver should count the same."""

    requests_sent: int = 0  # HTTP POSTs, retries included
    delivered: int = 0  # distinct notifications acknowledged (2xx) at least once
    copies_delivered: int = 0  # acknowledged POSTs, repeats included
    dropped: int = 0  # never sent, by plan
    unregistered: int = 0  # never sent: no webhook registered for the type
    non_2xx_responses: int = 0
    connection_errors: int = 0
    undelivered: list[str] = field(default_factory=list)  # keys planned, never acknowledged
    statuses: list[int] = field(default_factory=list)

    @property
    def duplicates_sent(self) -> int:
        return self.copies_delivered - self.delivered


class AccountsWebhookDeliverer(RetryingSender):
    def __init__(
        self,
        directory: Directory,
        *,
        max_attempts: int = 3,
        retry_delay: float = 0.5,
        client: httpx.Client | None = None,
        timeout: float = 5.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(
            max_attempts=max_attempts,
            retry_delay=retry_delay,
            client=client,
            timeout=timeout,
            sleep=sleep,
        )
        self._directory = directory

    def deliver(
        self,
        notifications: Sequence[Mapping[str, Any]],
        plan: Mapping[str, PixFault] | None = None,
    ) -> NotificationReport:
        """Send each notification as ``plan`` says (missing from the plan: once).

        All first copies go out before any repeat, so a repeat reaches the receiver as a
        later, separate request — the case a deduplicator must handle.
        """
        report = NotificationReport()
        copies: list[tuple[str, Mapping[str, Any], int]] = []
        for item in notifications:
            times = (plan or {}).get(notification_key(item), PixFault.deliver()).times
            if self._directory.webhook(str(item.get("type"))) is None:
                report.unregistered += 1
            elif times == 0:
                report.dropped += 1
            else:
                copies.append((notification_key(item), item, times))
        acknowledged = send_in_rounds(copies, lambda batch: self._send(batch[0], report))
        report.delivered = len(acknowledged)
        report.copies_delivered = sum(acknowledged.values())
        report.undelivered = [key for key, _, _ in copies if key not in acknowledged]
        return report

    def _send(self, item: Mapping[str, Any], report: NotificationReport) -> bool:
        webhook = self._directory.webhook(str(item.get("type")))
        if webhook is None:
            return False
        headers = {}
        if webhook.secret_header_name and webhook.secret_header_value:
            headers[webhook.secret_header_name] = webhook.secret_header_value
        return self.post(webhook.url, dumps(item).encode("utf-8"), report, headers)
