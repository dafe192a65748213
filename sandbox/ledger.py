"""The Pix the sandbox PSP has received, in the shapes the QR code API returns them."""

from __future__ import annotations

import bisect
import copy
import random
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, Final

from sandbox.clock import Clock, format_rfc3339, to_millis
from sandbox.defaults import DEFAULT_PAYER_NAME
from sandbox.ids import TXID_RE, new_cpf, new_end_to_end_id, new_return_id

_CENT: Final = Decimal("0.01")
_MAX_AMOUNT: Final = Decimal("9999999999.99")  # the spec's \d{1,10}\.\d{2}
_CPF_RE: Final = re.compile(r"\d{11}")
_CNPJ_RE: Final = re.compile(r"[0-9A-Z]{14}")
_REFUND_ID_RE: Final = re.compile(r"[A-Za-z0-9]{1,35}")

REFUND_STATUSES: Final = frozenset({"EM_PROCESSAMENTO", "DEVOLVIDO", "NAO_REALIZADO"})
REFUND_NATURES: Final = frozenset(
    {"ORIGINAL", "RETIRADA", "MED_OPERACIONAL", "MED_FRAUDE", "MED_PIX_AUTOMATICO"}
)


def format_amount(amount: Decimal) -> str:
    """``Decimal("110")`` → ``"110.00"``; anything inexact or out of the spec's range fails."""
    if not isinstance(amount, Decimal):
        raise TypeError(f"amounts are Decimal, got {type(amount).__name__}")
    if not amount.is_finite() or amount <= 0 or amount > _MAX_AMOUNT:
        raise ValueError(f"amount out of range: {amount}")
    if amount.quantize(_CENT) != amount:
        raise ValueError(f"amount has more than 2 decimal places: {amount}")
    return f"{amount:.2f}"


@dataclass(slots=True)
class _Record:
    horario: datetime
    e2eid: str
    amount: Decimal
    payer_cpf: str | None
    payer_cnpj: str | None
    body: dict[str, Any]
    refunds: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def sort_key(self) -> tuple[datetime, str]:
        return (self.horario, self.e2eid)

    def refunded_amount(self) -> Decimal:
        return sum(
            (Decimal(r["valor"]) for r in self.refunds.values() if r["status"] != "NAO_REALIZADO"),
            Decimal(0),
        )


@dataclass(frozen=True, slots=True)
class PixQuery:
    """Filters of ``GET /pix``; the time range is inclusive at both ends, as in the spec."""

    inicio: datetime
    fim: datetime
    txid: str | None = None
    txid_present: bool | None = None
    refund_present: bool | None = None
    cpf: str | None = None
    cnpj: str | None = None

    def matches(self, record: _Record) -> bool:
        txid = record.body.get("txid")
        return (
            (self.txid is None or txid == self.txid)
            and (self.txid_present is None or (txid is not None) == self.txid_present)
            and (self.refund_present is None or bool(record.refunds) == self.refund_present)
            and (self.cpf is None or record.payer_cpf == self.cpf)
            and (self.cnpj is None or record.payer_cnpj == self.cnpj)
        )


@dataclass(frozen=True, slots=True)
class PixPage:
    items: list[dict[str, Any]]
    total: int


class PixLedger:
    """Received Pix ordered by (horario, endToEndId); safe to share between threads.

    Callers get deep copies, so nothing outside can change what the API will answer.
    """

    def __init__(self, *, ispb: str, pix_key: str, rng: random.Random, clock: Clock) -> None:
        self._lock = threading.Lock()
        self._ispb = ispb
        self._pix_key = pix_key
        self._rng = rng
        self._clock = clock
        self._by_id: dict[str, _Record] = {}
        self._ordered: list[_Record] = []

    def __len__(self) -> int:
        with self._lock:
            return len(self._ordered)

    def receive(
        self,
        amount: Decimal,
        *,
        txid: str | None = None,
        payer_cpf: str | None = None,
        payer_cnpj: str | None = None,
        payer_name: str = DEFAULT_PAYER_NAME,
        info_pagador: str | None = None,
        horario: datetime | None = None,
        chave: str | None = None,
        components: Mapping[str, Decimal] | None = None,
    ) -> dict[str, Any]:
        """``components``: the parts of ``componentesValor`` (``original``, ``multa``,
        ``juros``, ``abatimento``, ``desconto``), which must add up to ``amount``; by
        default the whole Pix is ``original``."""
        valor = format_amount(amount)
        parts = dict(components) if components is not None else {"original": amount}
        signs = {"original": 1, "multa": 1, "juros": 1, "abatimento": -1, "desconto": -1}
        if not parts.keys() <= signs.keys() or "original" not in parts:
            raise ValueError(f"unknown componentesValor parts: {sorted(parts)}")
        if sum((signs[name] * value for name, value in parts.items()), Decimal(0)) != amount:
            raise ValueError("componentesValor must add up to the Pix's amount")
        shown = {name: {"valor": format_amount(value)} for name, value in parts.items()}
        if txid is not None and not TXID_RE.fullmatch(txid):
            raise ValueError(f"txid must be 1-35 alphanumerics, got {txid!r}")
        if payer_cpf is not None and payer_cnpj is not None:
            raise ValueError("a payer has a CPF or a CNPJ, not both")
        if payer_cpf is not None and not _CPF_RE.fullmatch(payer_cpf):
            raise ValueError(f"CPF must be 11 digits, got {payer_cpf!r}")
        if payer_cnpj is not None and not _CNPJ_RE.fullmatch(payer_cnpj):
            raise ValueError(f"CNPJ must be 14 digits or capitals, got {payer_cnpj!r}")
        if info_pagador is not None and len(info_pagador) > 140:
            raise ValueError("infoPagador has at most 140 characters")
        at = to_millis(horario if horario is not None else self._clock())

        with self._lock:
            if payer_cpf is None and payer_cnpj is None:
                payer_cpf = new_cpf(self._rng)
            e2eid = new_end_to_end_id(self._ispb, at, self._rng)
            while e2eid in self._by_id:
                e2eid = new_end_to_end_id(self._ispb, at, self._rng)
            body: dict[str, Any] = {"endToEndId": e2eid}
            if txid is not None:
                body["txid"] = txid
            body["valor"] = valor
            body["componentesValor"] = shown
            body["chave"] = chave if chave is not None else self._pix_key
            body["horario"] = format_rfc3339(at)
            if info_pagador is not None:
                body["infoPagador"] = info_pagador
            # Not in the BCB spec, but real providers send it and merchants rely on it.
            payer: dict[str, str] = (
                {"cpf": payer_cpf} if payer_cpf is not None else {"cnpj": str(payer_cnpj)}
            )
            payer["nome"] = payer_name
            body["pagador"] = payer
            record = _Record(at, e2eid, amount, payer_cpf, payer_cnpj, body)
            self._by_id[e2eid] = record
            bisect.insort(self._ordered, record, key=lambda r: r.sort_key)
            return copy.deepcopy(body)

    def refund(
        self,
        e2eid: str,
        amount: Decimal,
        *,
        refund_id: str | None = None,
        natureza: str = "ORIGINAL",
        status: str = "DEVOLVIDO",
        motivo: str | None = None,
        at: datetime | None = None,
    ) -> dict[str, Any]:
        """Record a refund (``devolucao``) of a received Pix and return it."""
        valor = format_amount(amount)
        if natureza not in REFUND_NATURES:
            raise ValueError(f"unknown natureza {natureza!r}")
        if status not in REFUND_STATUSES:
            raise ValueError(f"unknown refund status {status!r}")
        moment = to_millis(at if at is not None else self._clock())
        when = format_rfc3339(moment)
        with self._lock:
            record = self._by_id[e2eid]
            if refund_id is None:
                refund_id = f"D{len(record.refunds) + 1}{e2eid[-8:]}"
            if not _REFUND_ID_RE.fullmatch(refund_id):
                raise ValueError(f"refund id must be 1-35 alphanumerics, got {refund_id!r}")
            if refund_id in record.refunds:
                raise ValueError(f"refund {refund_id!r} already exists for {e2eid}")
            if status != "NAO_REALIZADO" and record.refunded_amount() + amount > record.amount:
                raise ValueError("refunds would exceed the Pix amount")
            refund: dict[str, Any] = {
                "id": refund_id,
                "rtrId": new_return_id(self._ispb, moment, self._rng),
                "valor": valor,
                "natureza": natureza,
                "horario": {"solicitacao": when},
                "status": status,
            }
            if status == "DEVOLVIDO":
                refund["horario"]["liquidacao"] = when
            if motivo is not None:
                refund["motivo"] = motivo
            record.refunds[refund_id] = refund
            record.body["devolucoes"] = list(record.refunds.values())
            return copy.deepcopy(refund)

    def settle_refund(
        self, e2eid: str, refund_id: str, *, status: str = "DEVOLVIDO", motivo: str | None = None
    ) -> dict[str, Any]:
        """Move a refund out of ``EM_PROCESSAMENTO``, as the SPI eventually does."""
        if status not in REFUND_STATUSES:
            raise ValueError(f"unknown refund status {status!r}")
        with self._lock:
            refund = self._by_id[e2eid].refunds[refund_id]
            refund["status"] = status
            if status == "DEVOLVIDO":
                refund["horario"]["liquidacao"] = format_rfc3339(self._clock())
            if motivo is not None:
                refund["motivo"] = motivo
            return copy.deepcopy(refund)

    def balance_cents(self) -> int:
        """Every Pix received minus every refund settled (``DEVOLVIDO``), in centavos."""
        with self._lock:
            received = sum((r.amount for r in self._ordered), Decimal(0))
            refunded = sum(
                (
                    Decimal(refund["valor"])
                    for record in self._ordered
                    for refund in record.refunds.values()
                    if refund["status"] == "DEVOLVIDO"
                ),
                Decimal(0),
            )
        return int((received - refunded) * 100)

    def get(self, e2eid: str) -> dict[str, Any] | None:
        with self._lock:
            record = self._by_id.get(e2eid)
            return copy.deepcopy(record.body) if record is not None else None

    def all(self) -> list[dict[str, Any]]:
        with self._lock:
            return [copy.deepcopy(r.body) for r in self._ordered]

    def query(self, query: PixQuery, *, page: int, per_page: int) -> PixPage:
        with self._lock:
            low = bisect.bisect_left(self._ordered, (query.inicio, ""), key=lambda r: r.sort_key)
            # "\x7f" sorts after every alphanumeric, so ids at exactly ``fim`` are kept.
            high = bisect.bisect_right(self._ordered, (query.fim, "\x7f"), key=lambda r: r.sort_key)
            matching = [r for r in self._ordered[low:high] if query.matches(r)]
            start = page * per_page
            items = [copy.deepcopy(r.body) for r in matching[start : start + per_page]]
            return PixPage(items=items, total=len(matching))
