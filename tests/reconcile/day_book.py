"""A business day written item by item, as the provider's notifications and API would
bring it: each item goes through the real inbox, payload parsing and handlers, so the
nightly run sees exactly what it would in production. Amounts in centavos; times local to
São Paulo on the book's day."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import Engine, select, update
from sqlmodel import col

from reconcile.db import session_scope
from reconcile.inbox import NewItem, store_items
from reconcile.models import (
    AccountMovement,
    Confirmation,
    Infraction,
    PixReceived,
    PixRefund,
    ReconciliationItem,
    Source,
)
from reconcile.nightly import NightlyResult
from reconcile.payloads.accounts import accounts_items
from reconcile.payloads.automatico import rec_callback_items
from reconcile.payloads.charges import charge_item
from reconcile.payloads.pix import PixItem, pix_items
from reconcile.payloads.statement import statement_item
from reconcile.processing import process_items
from reconcile.timeutil import BUSINESS_TZ
from tests.factories import e2e_id


def reais(cents: int) -> str:
    return str(Decimal(cents) / 100)


@dataclass
class DayBook:
    engine: Engine
    day: date
    balance: int = 100_000
    lines: int = 0
    ids: list[int] = field(default_factory=list)

    def at(self, clock: str, day: date | None = None) -> datetime:
        hour, minute, *second = (int(part) for part in clock.split(":"))
        local = time(hour, minute, second[0] if second else 0)
        return datetime.combine(day or self.day, local, tzinfo=BUSINESS_TZ)

    def _store(
        self, items: list[NewItem], source: Source, received: datetime | None = None
    ) -> None:
        with session_scope(self.engine) as session:
            new = store_items(session, items, source=source, now=received).new_ids
        process_items(self.engine, new)
        self.ids.extend(new)

    def pix(
        self,
        cents: int,
        clock: str,
        *,
        webhook: bool = True,
        polled: bool = True,
        e2e: str | None = None,
        refunds: list[dict[str, Any]] | None = None,
        txid: str | None = None,
        components: dict[str, Any] | None = None,
        payer: dict[str, str] | None = None,
        info: str | None = None,
        received: datetime | None = None,
    ) -> str:
        raw: dict[str, Any] = {
            "endToEndId": e2e or e2e_id(),
            "valor": reais(cents),
            "horario": self.at(clock).isoformat(),
        }
        if txid is not None:
            raw["txid"] = txid
        if components is not None:
            raw["componentesValor"] = components
        if refunds:
            raw["devolucoes"] = refunds
        if payer is not None:
            raw["pagador"] = payer
        if info is not None:
            raw["infoPagador"] = info
        items = pix_items(PixItem.model_validate(raw), raw)
        if webhook:
            self._store(items, Source.WEBHOOK, received)
        if polled:
            self._store(items, Source.POLL, received)
        return str(raw["endToEndId"])

    def confirm_all_movements(self) -> None:
        """What the confirm job does when the accounts API knows every notified movement."""
        self._confirm_all(AccountMovement)

    def confirm_all_pix(self) -> None:
        """What the confirm job does when the API knows every notified Pix."""
        self._confirm_all(PixReceived)

    def confirm_all_refunds(self) -> None:
        """What the confirm job does when the API lists every notified refund as notified
        (with the Pix it refunds)."""
        self._confirm_all(PixRefund)

    def _confirm_all(
        self, model: type[AccountMovement] | type[PixReceived] | type[PixRefund]
    ) -> None:
        with session_scope(self.engine) as session:
            session.execute(
                update(model)
                .where(col(model.confirmation) == Confirmation.PENDING.value)
                .values(confirmation=Confirmation.CONFIRMED.value)
            )

    def confirm_all_infractions(self) -> None:
        """What the confirm job does when the accounts API states every MED case's
        closing as notified."""
        with session_scope(self.engine) as session:
            session.execute(
                update(Infraction)
                .where(col(Infraction.confirmation) == Confirmation.PENDING.value)
                .values(
                    confirmation=Confirmation.CONFIRMED.value,
                    confirmed_debited_cents=col(Infraction.debited_cents),
                )
            )

    def line(
        self,
        kind: str,
        cents: int,
        clock: str,
        *,
        credit: bool,
        day: date | None = None,
        **keys: Any,
    ) -> str:
        """A statement line with its running balance."""
        self.lines += 1
        self.balance += cents if credit else -cents
        entry = f"line-{self.day.isoformat()}-{self.lines}"
        raw = {
            "id": entry,
            "type": "CREDIT" if credit else "DEBIT",
            "category": kind,
            "amount": reais(cents),
            "balanceAfter": reais(self.balance),
            "createdAt": self.at(clock, day).isoformat(),
            **keys,
        }
        self._store([statement_item(raw)], Source.POLL)
        return entry

    def transfer(
        self,
        data: dict[str, Any],
        *,
        webhook: bool = True,
        polled: bool = False,
        received: datetime | None = None,
    ) -> None:
        """``received``: when the notification arrived (now, if not given)."""
        items = accounts_items({"type": "TRANSFER", "data": data})
        if webhook:
            self._store(items, Source.WEBHOOK, received)
        if polled:
            self._store(items, Source.POLL, received)

    def infraction(self, data: dict[str, Any], *, webhook: bool = True) -> None:
        """An INFRACTION notification: the case, without the Pix it disputes."""
        items = accounts_items({"type": "INFRACTION", "data": data})
        self._store(items, Source.WEBHOOK if webhook else Source.POLL)

    def payout_data(self, key: str | None, cents: int, clock: str, **extra: Any) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": f"id-{key or e2e_id()}",
            "endToEndId": None,
            "status": "LIQUIDATED",
            "createdAt": self.at(clock).isoformat(),
            "payment": {"currency": "BRL", "amount": reais(cents)},
            "creditDebitType": "DEBIT",
            **extra,
        }
        if key is not None:
            data["idempotencyKey"] = key
        return data

    def charge(
        self,
        kind: str,
        txid: str,
        cents: int,
        clock: str,
        terms: dict[str, Any] | None = None,
        status: str = "ATIVA",
        extra: dict[str, Any] | None = None,
        **calendario: Any,
    ) -> None:
        """A charge as ``GET /cob`` or ``GET /cobv`` lists it; ``terms`` are a cobv's
        ``multa``, ``juros``, ``abatimento`` and ``desconto``."""
        raw = {
            "txid": txid,
            "status": status,
            "calendario": {"criacao": self.at(clock).isoformat(), **calendario},
            "valor": {"original": reais(cents), **(terms or {})},
            **(extra or {}),
        }
        self._store([charge_item(kind, raw)], Source.POLL)

    def recurrence(
        self, id_rec: str, start: date, periodicity: str, cents: int | None = None
    ) -> None:
        """An approved Pix Automático recurrence as ``GET /rec`` lists it."""
        raw: dict[str, Any] = {
            "idRec": id_rec,
            "status": "APROVADA",
            "calendario": {"dataInicial": start.isoformat(), "periodicidade": periodicity},
            "atualizacao": [{"status": "APROVADA", "data": self.at("06:00").isoformat()}],
        }
        if cents is not None:
            raw["valor"] = {"valorRec": reais(cents)}
        self._store(rec_callback_items(raw), Source.POLL)

    def next_day(self) -> DayBook:
        return DayBook(self.engine, self.day + timedelta(days=1), self.balance)


def verdicts_of(engine: Engine, result: NightlyResult) -> dict[tuple[str, str], ReconciliationItem]:
    """The run's verdicts by (subject, ref)."""
    with session_scope(engine) as session:
        rows = session.execute(
            select(ReconciliationItem).where(
                ReconciliationItem.run_id == result.run_id  # type: ignore[arg-type]
            )
        ).scalars()
        return {(row.subject, row.ref): row for row in rows}
