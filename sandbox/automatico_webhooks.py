"""Deliver Pix Automático notifications, with the same scripted losses and repeats as Pix.

BCB style: ``POST {webhookUrl}/rec`` with ``{"recs": [...]}`` (``WebhookRecBody``) and
``POST {webhookUrl}/cobr`` with ``{"cobsr": [...]}`` (``WebhookCobRBody``). The fault plan
is the one of ``sandbox.webhooks`` (``PixFault``), keyed by ``idRec`` or by ``txid``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

import httpx

from sandbox.delivery import RetryingSender, send_in_rounds
from sandbox.webhooks import PixFault

JsonObject = Mapping[str, Any]


class NotificationKind(StrEnum):
    REC = "rec"
    COBR = "cobr"


# Per kind: the body's wrapper key, the item's identity, and the fields a notification
# carries (``RecNotification`` / ``CobRNotification``) out of the full API object.
_WRAPPER: Final = {NotificationKind.REC: "recs", NotificationKind.COBR: "cobsr"}
_IDENTITY: Final = {NotificationKind.REC: "idRec", NotificationKind.COBR: "txid"}
_FIELDS: Final = {
    NotificationKind.REC: ("idRec", "status", "atualizacao", "encerramento", "ativacao"),
    NotificationKind.COBR: (
        "idRec",
        "txid",
        "status",
        "atualizacao",
        "encerramento",
        "tentativas",
        "pix",
    ),
}


def notification(kind: NotificationKind, item: JsonObject) -> dict[str, Any]:
    """What the provider notifies of a recurrence or recurring charge (as ``GET`` shows
    it): the status, its history and the attempts, not the whole contract."""
    return {name: item[name] for name in _FIELDS[kind] if name in item}


@dataclass
class NotificationReport:
    """What the sender knows happened; a receiver should count the same."""

    requests_sent: int = 0  # HTTP POSTs, retries included
    delivered: int = 0  # notifications acknowledged (2xx) at least once
    copies_delivered: int = 0  # notifications in acknowledged POSTs, repeats included
    dropped: int = 0  # never sent, by plan
    non_2xx_responses: int = 0
    connection_errors: int = 0
    undelivered: list[str] = field(default_factory=list)  # planned ids, never acknowledged
    statuses: list[int] = field(default_factory=list)

    @property
    def duplicates_sent(self) -> int:
        return self.copies_delivered - self.delivered


class AutomaticoDeliverer(RetryingSender):
    """POSTs recurrences to ``{webhook_url}/rec`` and recurring charges to ``…/cobr``."""

    def __init__(
        self,
        webhook_url: str,
        *,
        secret_header: str | None = None,
        secret: str | None = None,
        batch_size: int = 1,
        max_attempts: int = 3,
        retry_delay: float = 0.5,
        client: httpx.Client | None = None,
        timeout: float = 5.0,
        sleep: Callable[[float], None] = time.sleep,
        extra_headers: Mapping[str, str] | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        super().__init__(
            max_attempts=max_attempts,
            retry_delay=retry_delay,
            client=client,
            timeout=timeout,
            sleep=sleep,
            secret_header=secret_header,
            secret=secret,
            extra_headers=extra_headers,
        )
        self._base = httpx.URL(webhook_url)
        self._batch_size = batch_size

    def target_url(self, kind: NotificationKind) -> str:
        # As for Pix, a trailing slash on the registered URL must not give "//rec".
        return str(self._base.copy_with(path=self._base.path.rstrip("/") + "/" + kind.value))

    def deliver_recs(
        self, recs: Sequence[JsonObject], plan: Mapping[str, PixFault] | None = None
    ) -> NotificationReport:
        """Notify ``recs`` (``GET /rec`` objects); ``plan`` is keyed by ``idRec``."""
        return self.deliver(NotificationKind.REC, recs, plan)

    def deliver_cobrs(
        self, cobrs: Sequence[JsonObject], plan: Mapping[str, PixFault] | None = None
    ) -> NotificationReport:
        """Notify ``cobrs`` (``GET /cobr`` objects); ``plan`` is keyed by ``txid``."""
        return self.deliver(NotificationKind.COBR, cobrs, plan)

    def deliver(
        self,
        kind: NotificationKind,
        items: Sequence[JsonObject],
        plan: Mapping[str, PixFault] | None = None,
    ) -> NotificationReport:
        """All first copies go out before any repeat, so a repeat is always a later,
        separate request, as with ``WebhookDeliverer``."""
        report = NotificationReport()
        identity = _IDENTITY[kind]
        copies: list[tuple[int, dict[str, Any], int]] = []
        for index, item in enumerate(items):
            times = (plan or {}).get(item[identity], PixFault.deliver()).times
            if times == 0:
                report.dropped += 1
            else:
                copies.append((index, notification(kind, item), times))

        url = self.target_url(kind)

        def post(batch: list[dict[str, Any]]) -> bool:
            content = json.dumps({_WRAPPER[kind]: batch}, ensure_ascii=False).encode("utf-8")
            return self.post(url, content, report)

        acknowledged = send_in_rounds(copies, post, batch_size=self._batch_size)
        report.delivered = len(acknowledged)
        report.copies_delivered = sum(acknowledged.values())
        report.undelivered = [
            str(body[identity]) for index, body, _ in copies if index not in acknowledged
        ]
        return report
