"""Pix Automático records and the BCB bodies they are shown as (``RecCompleta``,
``CobRCompleta``); ``AutomaticoBook`` in ``sandbox.automatico`` moves them along."""

from __future__ import annotations

from calendar import monthrange
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, Final

from sandbox.charges import BUSINESS_TZ
from sandbox.clock import format_rfc3339

REC_TRANSITIONS: Final = {
    "CRIADA": frozenset({"APROVADA", "REJEITADA", "EXPIRADA", "CANCELADA"}),
    "APROVADA": frozenset({"CANCELADA"}),
}
PERIODICITIES: Final = frozenset({"SEMANAL", "MENSAL", "TRIMESTRAL", "SEMESTRAL", "ANUAL"})
# "PERMITE_3R_7D": up to three retries after the first attempt, within seven days.
MAX_ATTEMPTS: Final = {"NAO_PERMITE": 1, "PERMITE_3R_7D": 4}
ATTEMPT_REJECTION_CODES: Final = frozenset(
    {"AB10", "AC05", "AC06", "AM02", "AM09", "DENC", "DS27", "DTED", "DTNT", "FBRD"}
    | {"IRNT", "MIDI", "MSUC", "NIEC", "NIPA", "NITX", "QUNT", "RC09", "UDEI"}
)
# How a recurrence that ends early explains itself (``encerramento``).
REC_ENDINGS: Final = {
    "REJEITADA": {"rejeicao": {"codigo": "AP13", "descricao": "Rejeitada pelo pagador."}},
    "CANCELADA": {
        "cancelamento": {
            "solicitante": "USUARIO_PAGADOR",
            "codigo": "SLDB",
            "descricao": "Cancelada pelo pagador.",
        }
    },
}
OPEN_COBR_STATUSES: Final = frozenset({"CRIADA", "ATIVA"})
# Months from one cycle to the next; SEMANAL counts seven days instead.
MONTHS_PER_CYCLE: Final = {"MENSAL": 1, "TRIMESTRAL": 3, "SEMESTRAL": 6, "ANUAL": 12}


def is_cycle_date(start: date, periodicity: str, day: date) -> bool:
    """Whether a recurrence whose ``calendario.dataInicial`` is ``start`` has a cycle on
    ``day``: every seven days for SEMANAL; otherwise on the start's day of the month every
    1, 3, 6 or 12 months, on the month's last day when the month is shorter (a monthly
    recurrence started on the 31st falls on 30 April)."""
    if day < start:
        return False
    if periodicity == "SEMANAL":
        return (day - start).days % 7 == 0
    months = (day.year - start.year) * 12 + day.month - start.month
    if months % MONTHS_PER_CYCLE[periodicity]:
        return False
    return day.day == min(start.day, monthrange(day.year, day.month)[1])


def next_cycle_date(start: date, periodicity: str, cycle: date) -> date:
    """The date of the cycle after ``cycle`` (one of the recurrence's cycle dates), counted
    from ``start`` as ``is_cycle_date`` counts them: a recurring charge belongs to the
    cycle its due date falls in, from ``cycle`` up to the day before this one."""
    if periodicity == "SEMANAL":
        return cycle + timedelta(days=7)
    total = cycle.month - 1 + MONTHS_PER_CYCLE[periodicity]
    year, month = cycle.year + total // 12, total % 12 + 1
    return date(year, month, min(start.day, monthrange(year, month)[1]))


def local_date(value: datetime) -> str:
    """Dates of Pix Automático (creation, settlement) are calendar days in Brazil."""
    return value.astimezone(BUSINESS_TZ).date().isoformat()


@dataclass(slots=True)
class Tracked:
    """A body whose ``status`` changes are appended to its ``atualizacao`` history."""

    created: datetime
    body: dict[str, Any]

    @property
    def status(self) -> str:
        return str(self.body["status"])

    def move(self, status: str, at: datetime) -> None:
        self.body["status"] = status
        self.body["atualizacao"].append({"status": status, "data": format_rfc3339(at)})


@dataclass(slots=True)
class RecRecord(Tracked):
    id_rec: str


@dataclass(slots=True)
class CobRRecord(Tracked):
    txid: str
    rec: RecRecord
    amount: Decimal
    e2eids: list[str] = field(default_factory=list)


def rec_body(
    id_rec: str,
    *,
    debtor: Mapping[str, str],
    contract: str,
    valor: str | None,
    start: date,
    end: date | None,
    periodicity: str,
    retry_policy: str,
    merchant: Mapping[str, str],
    payer_ispb: str,
    at: datetime,
) -> dict[str, Any]:
    calendario = {"dataInicial": start.isoformat()}
    if end is not None:
        calendario["dataFinal"] = end.isoformat()
    calendario["periodicidade"] = periodicity
    body: dict[str, Any] = {
        "idRec": id_rec,
        "vinculo": {"contrato": contract, "devedor": dict(debtor)},
        "calendario": calendario,
    }
    if valor is not None:
        body["valor"] = {"valorRec": valor}
    body["recebedor"] = dict(merchant)
    # The payer's account is the debtor's, held at another PSP.
    payer = {k: v for k, v in debtor.items() if k in ("cpf", "cnpj")}
    body["pagador"] = {**payer, "ispbParticipante": payer_ispb}
    body["politicaRetentativa"] = retry_policy
    body["status"] = "CRIADA"
    body["atualizacao"] = [{"status": "CRIADA", "data": format_rfc3339(at)}]
    body["ativacao"] = {"tipoJornada": "JORNADA_2"}
    return body


def cobr_body(
    rec: RecRecord, txid: str, valor: str, due_date: date, account: Mapping[str, str], at: datetime
) -> dict[str, Any]:
    when = format_rfc3339(at)
    return {
        "idRec": rec.id_rec,
        "txid": txid,
        "calendario": {"criacao": local_date(at), "dataDeVencimento": due_date.isoformat()},
        "valor": {"original": valor},
        "ajusteDiaUtil": True,
        "recebedor": dict(account),
        "politicaRetentativa": rec.body["politicaRetentativa"],
        # The payer's PSP accepts the schedule at once in the sandbox.
        "status": "ATIVA",
        "atualizacao": [{"status": "CRIADA", "data": when}, {"status": "ATIVA", "data": when}],
    }


def attempt_entry(
    *, first: bool, e2eid: str, rejection_code: str | None, at: datetime
) -> dict[str, Any]:
    """One ``tentativas`` item, already settled (PAGA) or refused (REJEITADA)."""
    when = format_rfc3339(at)
    final = "PAGA" if rejection_code is None else "REJEITADA"
    entry: dict[str, Any] = {
        "dataLiquidacao": local_date(at),
        "tipo": "AGND" if first else "NTAG",
        "status": final,
        "endToEndId": e2eid,
        "atualizacao": [
            {"status": "SOLICITADA", "data": when},
            {"status": "AGENDADA", "data": when},
            {"status": final, "data": when},
        ],
    }
    if rejection_code is not None:
        entry["rejeicao"] = {"codigo": rejection_code, "descricao": "Liquidação não realizada."}
    return entry


def matches(rec: RecRecord, body: Mapping[str, Any], filters: Mapping[str, str]) -> bool:
    """The list filters of ``GET /rec`` and ``GET /cobr``; documents are the debtor's."""
    devedor = rec.body["vinculo"]["devedor"]
    return (
        all(devedor.get(k) == filters[k] for k in ("cpf", "cnpj") if k in filters)
        and ("status" not in filters or body["status"] == filters["status"])
        and ("idRec" not in filters or rec.id_rec == filters["idRec"])
    )
