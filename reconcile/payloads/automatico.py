"""Pix Automático callbacks: recurrences (``{recs: [...]}``) and recurring charges
(``{cobsr: [...]}``), as in the BCB ``WebhookRecBody`` and ``WebhookCobRBody``."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from pydantic import Field

from reconcile.inbox import NewItem
from reconcile.models import ItemKind
from reconcile.money import InvalidAmount, parse_amount, to_cents
from reconcile.payloads import UNKNOWN_STATUS, Expect, Tolerant, one_of, timestamp
from reconcile.payloads.items import (
    Refusal,
    Unsplittable,
    keyed,
    new_item,
    split_body,
    unsupported_item,
)
from reconcile.payloads.pix import E2E_PATTERN, TXID_PATTERN
from reconcile.payloads.tolerant import read_timestamp

REC_STATUSES = ("CRIADA", "APROVADA", "REJEITADA", "EXPIRADA", "CANCELADA")
COBR_STATUSES = ("CRIADA", "ATIVA", "CONCLUIDA", "EXPIRADA", "REJEITADA", "CANCELADA")
ATTEMPT_STATUSES = ("SOLICITADA", "AGENDADA", "PAGA", "CANCELADA", "REJEITADA", "EXPIRADA")
PERIODICITIES = ("SEMANAL", "MENSAL", "TRIMESTRAL", "SEMESTRAL", "ANUAL")


def read_date(value: Any) -> date | None:
    """A calendar date (``2026-03-02``, or the date part of a date-time)."""
    try:
        return date.fromisoformat(value[:10]) if isinstance(value, str) else None
    except ValueError:
        return None


def _calendar_is_readable(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    dates = all(
        value.get(name) is None or read_date(value[name]) is not None
        for name in ("dataInicial", "dataFinal")
    )
    periodicity = value.get("periodicidade")
    known = periodicity is None or (
        isinstance(periodicity, str) and periodicity.strip().upper() in PERIODICITIES
    )
    return dates and known


def _amount_is_readable(value: Any) -> bool:
    if not isinstance(value, dict) or value.get("valorRec") is None:
        return isinstance(value, dict)
    try:
        to_cents(parse_amount(value["valorRec"]))
    except InvalidAmount:
        return False
    return True


# The recurrence's calendar and amount decide which cycles are due (missed_cycle): one that
# cannot be read is kept as it came, and flagged rather than silently left out.
CALENDAR = Expect(
    "an object with dataInicial and dataFinal as dates (YYYY-MM-DD) and periodicidade one "
    "of " + ", ".join(PERIODICITIES),
    _calendar_is_readable,
)
REC_AMOUNT = Expect('an object whose valorRec is an amount, such as "35.00"', _amount_is_readable)


class Atualizacao(Tolerant):
    EXPECT = {"data": timestamp(required=True)}

    status: str | None = Field(default=None, max_length=32)
    # The newest one's text is part of the business key, which must stay short.
    data: str | None = Field(default=None, max_length=64)


class RecNotification(Tolerant):
    KEYS = ("idRec",)
    EXPECT = {
        "status": one_of(*REC_STATUSES, required=True),
        "calendario": CALENDAR,
        "valor": REC_AMOUNT,
    }

    idRec: str | None = Field(default=None, min_length=1, max_length=35)
    status: str | None = Field(default=None, min_length=1, max_length=32)
    atualizacao: list[Atualizacao] | None = None

    def updated(self) -> str:
        return latest_update(self.status, self.atualizacao or [])

    def item_key(self) -> str:
        return f"rec:{self.idRec}:{self.status or UNKNOWN_STATUS}:{self.updated()}"


# Before any time a provider writes: an undated attempt sorts before every dated one.
_NEVER = datetime.min.replace(tzinfo=UTC)


class Tentativa(Tolerant):
    """One attempt to collect a recurring charge; its Pix has its own ``endToEndId``."""

    EXPECT = {"status": one_of(*ATTEMPT_STATUSES)}

    endToEndId: str | None = Field(default=None, pattern=E2E_PATTERN)
    status: str | None = Field(default=None, max_length=32)
    tipo: str | None = None
    dataLiquidacao: str | None = None
    atualizacao: list[Atualizacao] | None = None

    def latest_change(self) -> datetime | None:
        """When this attempt last changed (its ``atualizacao``), else the day it settles."""
        dated = [when for when in (read_timestamp(e.data) for e in self.atualizacao or []) if when]
        if dated:
            return max(dated)
        return read_timestamp(self.dataLiquidacao) if self.dataLiquidacao else None


class CobRNotification(Tolerant):
    KEYS = ("txid",)
    EXPECT = {"status": one_of(*COBR_STATUSES, required=True)}

    idRec: str | None = Field(default=None, max_length=35)
    txid: str | None = Field(default=None, pattern=TXID_PATTERN)
    status: str | None = Field(default=None, min_length=1, max_length=32)
    atualizacao: list[Atualizacao] | None = None
    tentativas: list[Tentativa] | None = None

    def updated(self) -> str:
        return latest_update(self.status, self.atualizacao or [])

    def item_key(self) -> str:
        return f"cobr:{self.txid}:{self.status or UNKNOWN_STATUS}:{self.attempt()}"

    def attempt(self) -> str:
        """How far collection went: attempts so far and the state of the last one."""
        last = self.last_attempt()
        if last is None:
            return "0"
        return f"{len(self.tentativas or [])}.{last.status or ''}"

    def last_attempt(self) -> Tentativa | None:
        """The attempt that changed last. ``tentativas`` is a history the BCB gives no
        order to: by position, the same charge sent with its attempts in another order
        was a new item, and stored its older attempt as the last one."""
        attempts = self.tentativas or []
        if not attempts:
            return None

        def order(numbered: tuple[int, Tentativa]) -> tuple[bool, datetime, int]:
            at, attempt = numbered
            when = attempt.latest_change()
            # Undated attempts keep the order they came in, before any dated one.
            return (when is not None, when or _NEVER, at)

        return max(enumerate(attempts), key=order)[1]


def latest_update(status: str | None, history: list[Atualizacao]) -> str:
    """The time of the newest history entry, preferring the current status: in UTC, so
    that one instant written in another offset or precision (by the webhook, by ``GET
    /rec``) is one key; its raw text only when it cannot be read."""
    same = [entry for entry in history if entry.status == status] or history
    if not same:
        return ""
    dated = [when for when in (read_timestamp(entry.data) for entry in same) if when]
    if not dated:
        return same[-1].data or ""
    when = max(dated).astimezone(UTC)
    # Milliseconds, as the BCB's examples and the provider write it (``…T12:43:53.337Z``):
    # keys of items stored before stay the same.
    precision = "microseconds" if when.microsecond % 1000 else "milliseconds"
    return when.isoformat(timespec=precision)[:-6] + "Z"


# What tells a flat object for a recurrence or a recurring charge (docs/design.md §4): the
# fields the models read and those the BCB documents. ``status`` is left out: alone, it is
# as likely a sender's health check as an item that lost its key.
REC_FIELDS = frozenset(RecNotification.model_fields) - {"status"} | {
    "vinculo",
    "calendario",
    "valor",
    "recebedor",
    "politicaRetentativa",
    "loc",
    "ativacao",
    "encerramento",
}
COBR_FIELDS = frozenset(CobRNotification.model_fields) - {"status"} | {
    "calendario",
    "valor",
    "recebedor",
    "devedor",
    "infoAdicional",
    "ajusteDiaUtil",
    "encerramento",
}


def _callback_items(
    document: Any,
    model: type[RecNotification] | type[CobRNotification],
    wrapper: str,
    fields: frozenset[str],
    kind: ItemKind,
    what: str,
) -> list[NewItem]:
    """The items of a Pix Automático callback: one per recurrence or recurring charge,
    keyed by what it is and how far it went; a body that cannot be split is kept whole."""
    try:
        split = split_body(document, wrapper, what, fields)
    except Unsplittable as exc:
        return [unsupported_item(kind.name, document, exc.warning)]
    refusal = Refusal()
    items = [
        new_item(kind, found.item_key(), raw, found.warnings())
        for found, raw, _ in keyed(model, split.candidates, f"a {what}", refusal)
    ]
    return split.flag(refusal.keep_the_rest(items, kind.name, f"a {what}"))


def rec_callback_items(document: Any) -> list[NewItem]:
    return _callback_items(
        document, RecNotification, "recs", REC_FIELDS, ItemKind.REC, "recurrence"
    )


def cobr_callback_items(document: Any) -> list[NewItem]:
    return _callback_items(
        document, CobRNotification, "cobsr", COBR_FIELDS, ItemKind.COBR, "recurring charge"
    )
