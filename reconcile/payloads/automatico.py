"""Pix Automático callbacks: recurrences (``{recs: [...]}``) and recurring charges
(``{cobsr: [...]}``), as in the BCB ``WebhookRecBody`` and ``WebhookCobRBody``."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from reconcile.inbox import NewItem, dump_json
from reconcile.models import ItemKind
from reconcile.payloads import PayloadInvalid, Tolerant, validate_each
from reconcile.payloads.pix import TXID_PATTERN
from reconcile.timeutil import parse_timestamp


class Atualizacao(Tolerant):
    status: str
    data: str


class RecNotification(Tolerant):
    idRec: str = Field(min_length=1, max_length=35)
    status: str = Field(min_length=1, max_length=32)
    atualizacao: list[Atualizacao] = Field(default_factory=list)

    def updated(self) -> str:
        return latest_update(self.status, self.atualizacao)


class Tentativa(Tolerant):
    """One attempt to collect a recurring charge; its Pix has its own ``endToEndId``."""

    endToEndId: str | None = None
    status: str | None = None
    tipo: str | None = None
    dataLiquidacao: str | None = None


class CobRNotification(Tolerant):
    idRec: str | None = Field(default=None, max_length=35)
    txid: str = Field(pattern=TXID_PATTERN)
    status: str = Field(min_length=1, max_length=32)
    atualizacao: list[Atualizacao] = Field(default_factory=list)
    tentativas: list[Tentativa] = Field(default_factory=list)

    def updated(self) -> str:
        return latest_update(self.status, self.atualizacao)

    def attempt(self) -> str:
        """How far collection went: attempts so far and the state of the last one."""
        if not self.tentativas:
            return "0"
        return f"{len(self.tentativas)}.{self.tentativas[-1].status or ''}"


class RecCallback(Tolerant):
    recs: list[RecNotification]


class CobRCallback(Tolerant):
    cobsr: list[CobRNotification]


def latest_update(status: str, history: list[Atualizacao]) -> str:
    """The time of the newest history entry (raw text), preferring the current status."""
    same = [entry for entry in history if entry.status == status] or history
    if not same:
        return ""
    readable = [(parse_timestamp(entry.data), entry.data) for entry in same]
    dated = [(when, raw) for when, raw in readable if when is not None]
    return max(dated)[1] if dated else same[-1].data


def _wrapped(document: Any, wrapper: str, what: str) -> list[tuple[str, Any]]:
    if isinstance(document, dict) and wrapper in document:
        inner = document[wrapper]
        if isinstance(inner, list):
            return [(f"/{wrapper}/{i}", item) for i, item in enumerate(inner)]
        if isinstance(inner, dict):
            return [(f"/{wrapper}", inner)]
    elif isinstance(document, list):
        return [(f"/{i}", item) for i, item in enumerate(document)]
    elif isinstance(document, dict):
        return [("", document)]
    raise PayloadInvalid(f'body must be {{"{wrapper}": [...]}} or {what} object(s)')


def rec_callback_items(document: Any) -> list[NewItem]:
    return [
        NewItem(
            kind=ItemKind.REC.value,
            key=f"rec:{rec.idRec}:{rec.status}:{rec.updated()}",
            payload=dump_json(raw),
        )
        for rec, raw in validate_each(
            RecNotification, _wrapped(document, "recs", "recurrence"), "recurrences"
        )
    ]


def cobr_callback_items(document: Any) -> list[NewItem]:
    return [
        NewItem(
            kind=ItemKind.COBR.value,
            key=f"cobr:{cobr.txid}:{cobr.status}:{cobr.attempt()}",
            payload=dump_json(raw),
        )
        for cobr, raw in validate_each(
            CobRNotification, _wrapped(document, "cobsr", "recurring charge"), "recurring charges"
        )
    ]
