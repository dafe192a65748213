"""One webhook URL per merchant, as ``PUT /webhookrec`` and ``PUT /webhookcobr`` store it."""

from __future__ import annotations

import threading
from typing import Any

from sandbox.clock import Clock, format_rfc3339


class WebhookSlot:
    """Unlike ``/webhook/{chave}``, Pix Automático has a single URL per kind, no key."""

    def __init__(self, *, clock: Clock) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._entry: dict[str, Any] | None = None

    def register(self, webhook_url: str) -> dict[str, Any]:
        entry = {"webhookUrl": webhook_url, "criacao": format_rfc3339(self._clock())}
        with self._lock:
            self._entry = entry
        return dict(entry)

    def get(self) -> dict[str, Any] | None:
        with self._lock:
            return dict(self._entry) if self._entry is not None else None

    def remove(self) -> bool:
        with self._lock:
            existed, self._entry = self._entry is not None, None
        return existed
