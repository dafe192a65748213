"""Webhook URLs registered per Pix key, as ``PUT /webhook/{chave}`` stores them."""

from __future__ import annotations

import threading
from typing import Any

from sandbox.clock import Clock, format_rfc3339


class WebhookRegistry:
    def __init__(self, *, clock: Clock) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._by_key: dict[str, dict[str, Any]] = {}

    def register(self, chave: str, webhook_url: str) -> dict[str, Any]:
        entry = {
            "webhookUrl": webhook_url,
            "chave": chave,
            "criacao": format_rfc3339(self._clock()),
        }
        with self._lock:
            self._by_key[chave] = entry
        return dict(entry)

    def get(self, chave: str) -> dict[str, Any] | None:
        with self._lock:
            entry = self._by_key.get(chave)
        return dict(entry) if entry is not None else None

    def remove(self, chave: str) -> bool:
        with self._lock:
            return self._by_key.pop(chave, None) is not None

    def all(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(entry) for entry in self._by_key.values()]
