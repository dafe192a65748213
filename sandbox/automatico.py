"""Pix Automático: recurrences (``rec``) and the recurring charges (``cobr``) under them.

Tests and the demo drive the life cycle through ``SandboxProvider`` (create, approve,
attempt, settle); clients read it over ``GET /rec`` and ``GET /cobr``. A successful
attempt books a Pix with the charge's txid in the ``PixLedger``, like any other credit.
"""

from __future__ import annotations

import copy
import random
import threading
from collections.abc import Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from sandbox.automatico_records import (
    ATTEMPT_REJECTION_CODES,
    MAX_ATTEMPTS,
    OPEN_COBR_STATUSES,
    PERIODICITIES,
    REC_ENDINGS,
    REC_TRANSITIONS,
    CobRRecord,
    RecRecord,
    attempt_entry,
    cobr_body,
    matches,
    rec_body,
)
from sandbox.clock import Clock, to_millis
from sandbox.ids import TXID_RE, new_end_to_end_id, new_txid
from sandbox.ledger import PixLedger, format_amount
from sandbox.listing import ListRequest


class AutomaticoBook:
    """Recurrences by ``idRec`` and recurring charges by txid; safe to share between
    threads. Callers get deep copies."""

    def __init__(
        self,
        *,
        ledger: PixLedger,
        rng: random.Random,
        clock: Clock,
        ispb: str,
        merchant: Mapping[str, str],
        account: Mapping[str, str],
    ) -> None:
        self._lock = threading.Lock()
        self._ledger = ledger
        self._rng = rng
        self._clock = clock
        self._ispb = ispb
        self._merchant = {"cnpj": merchant["cnpj"], "nome": merchant["nome"]}
        self._account = {**account, **self._merchant}
        self._recs: dict[str, RecRecord] = {}
        self._cobrs: dict[str, CobRRecord] = {}

    def _now(self, at: datetime | None) -> datetime:
        return to_millis(at if at is not None else self._clock())

    def create_recurrence(
        self,
        debtor: Mapping[str, str],
        *,
        contract: str,
        amount: Decimal | None,
        start: date,
        end: date | None,
        periodicity: str,
        retry_policy: str,
        payer_ispb: str,
        at: datetime | None,
    ) -> dict[str, Any]:
        if periodicity not in PERIODICITIES:
            raise ValueError(f"unknown periodicidade {periodicity!r}")
        if retry_policy not in MAX_ATTEMPTS:
            raise ValueError(f"unknown politicaRetentativa {retry_policy!r}")
        if not 0 < len(contract) <= 35:
            raise ValueError("a contract reference has 1 to 35 characters")
        if end is not None and end < start:
            raise ValueError("the recurrence ends before it starts")
        valor = format_amount(amount) if amount is not None else None
        moment = self._now(at)
        with self._lock:
            # "R" + "R"/"N" (retries allowed or not) + ISPB + yyyyMMdd + 11 alphanumerics.
            prefix = f"R{'R' if retry_policy == 'PERMITE_3R_7D' else 'N'}{self._ispb}"
            prefix += f"{moment:%Y%m%d}"
            id_rec = prefix + new_txid(self._rng, 11)
            while id_rec in self._recs:
                id_rec = prefix + new_txid(self._rng, 11)
            body = rec_body(
                id_rec,
                debtor=debtor,
                contract=contract,
                valor=valor,
                start=start,
                end=end,
                periodicity=periodicity,
                retry_policy=retry_policy,
                merchant=self._merchant,
                payer_ispb=payer_ispb,
                at=moment,
            )
            self._recs[id_rec] = RecRecord(moment, body, id_rec)
            return copy.deepcopy(body)

    def update_recurrence(self, id_rec: str, status: str, at: datetime | None) -> dict[str, Any]:
        moment = self._now(at)
        with self._lock:
            rec = self._recs[id_rec]
            if status not in REC_TRANSITIONS.get(rec.status, ()):
                raise ValueError(f"recurrence {id_rec} cannot go from {rec.status} to {status}")
            rec.move(status, moment)
            if status in REC_ENDINGS:
                rec.body["encerramento"] = copy.deepcopy(REC_ENDINGS[status])
            if status == "CANCELADA":
                # Charges not yet settled die with their recurrence.
                for cobr in self._cobrs.values():
                    if cobr.rec is rec and cobr.status in OPEN_COBR_STATUSES:
                        cobr.move("CANCELADA", moment)
            return copy.deepcopy(rec.body)

    def create_recurring_charge(
        self,
        id_rec: str,
        amount: Decimal,
        due_date: date,
        *,
        txid: str | None,
        at: datetime | None,
    ) -> dict[str, Any]:
        valor = format_amount(amount)
        if txid is not None and not TXID_RE.fullmatch(txid):
            raise ValueError(f"txid must be 1-35 alphanumerics, got {txid!r}")
        moment = self._now(at)
        with self._lock:
            rec = self._recs[id_rec]
            if rec.status != "APROVADA":
                raise ValueError(f"recurrence {id_rec} is {rec.status}, not APROVADA")
            if txid is None:
                txid = new_txid(self._rng)
                while txid in self._cobrs:
                    txid = new_txid(self._rng)
            elif txid in self._cobrs:
                raise ValueError(f"txid {txid} is already used by a recurring charge")
            body = cobr_body(rec, txid, valor, due_date, self._account, moment)
            self._cobrs[txid] = CobRRecord(moment, body, txid, rec, amount)
            return copy.deepcopy(body)

    def attempt(
        self, txid: str, *, succeed: bool, rejection_code: str, at: datetime | None
    ) -> dict[str, Any]:
        if rejection_code not in ATTEMPT_REJECTION_CODES:
            raise ValueError(f"unknown rejection code {rejection_code!r}")
        moment = self._now(at)
        with self._lock:
            cobr = self._cobrs[txid]
            if cobr.status != "ATIVA":
                raise ValueError(f"recurring charge {txid} is {cobr.status}, not ATIVA")
            tentativas: list[dict[str, Any]] = cobr.body.setdefault("tentativas", [])
            if succeed:
                devedor = cobr.rec.body["vinculo"]["devedor"]
                pix = self._ledger.receive(
                    cobr.amount,
                    txid=txid,
                    payer_cpf=devedor.get("cpf"),
                    payer_cnpj=devedor.get("cnpj"),
                    payer_name=devedor["nome"],
                    horario=moment,
                )
                cobr.e2eids.append(pix["endToEndId"])
                e2eid = pix["endToEndId"]
            else:
                # A failed debit still had an endToEndId: the payer's PSP created one.
                e2eid = new_end_to_end_id(self._ispb, moment, self._rng)
            entry = attempt_entry(
                first=not tentativas,
                e2eid=e2eid,
                rejection_code=None if succeed else rejection_code,
                at=moment,
            )
            tentativas.append(entry)
            if succeed:
                cobr.move("CONCLUIDA", moment)
            elif len(tentativas) >= MAX_ATTEMPTS[cobr.body["politicaRetentativa"]]:
                cobr.move("REJEITADA", moment)
                cobr.body["encerramento"] = {"rejeicao": dict(entry["rejeicao"])}
            return self._render_cobr(cobr)

    def get_rec(self, id_rec: str) -> dict[str, Any] | None:
        with self._lock:
            rec = self._recs.get(id_rec)
            return copy.deepcopy(rec.body) if rec is not None else None

    def get_cobr(self, txid: str) -> dict[str, Any] | None:
        with self._lock:
            cobr = self._cobrs.get(txid)
            return self._render_cobr(cobr) if cobr is not None else None

    def query_recs(self, request: ListRequest) -> list[dict[str, Any]]:
        """Recurrences created within the window that match the filters, oldest first."""
        with self._lock:
            recs = sorted(
                (r for r in self._recs.values() if request.covers(r.created)),
                key=lambda r: (r.created, r.id_rec),
            )
            return [copy.deepcopy(r.body) for r in recs if matches(r, r.body, request.filters)]

    def query_cobrs(self, request: ListRequest) -> list[dict[str, Any]]:
        """Recurring charges created within the window that match the filters."""
        with self._lock:
            cobrs = sorted(
                (c for c in self._cobrs.values() if request.covers(c.created)),
                key=lambda c: (c.created, c.txid),
            )
            return [self._render_cobr(c) for c in cobrs if matches(c.rec, c.body, request.filters)]

    def _render_cobr(self, cobr: CobRRecord) -> dict[str, Any]:
        body = copy.deepcopy(cobr.body)
        pix = [self._ledger.get(e2eid) for e2eid in cobr.e2eids]
        if pix:
            body["pix"] = [p for p in pix if p is not None]
        return body
