"""Money movements of the merchant's account and the statement built from them.

The statement is derived, never stored: Pix received and refunds sent come from the
shared QR code ledger, payouts and their refunds from the payment book, MED debits from
the infraction book. Deriving it on each request means the balance always equals the
opening balance plus the lines, whatever the QR side did meanwhile (including Pix booked
with a past ``horario``, which then shifts the ``balanceAfter`` of later lines).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from sandbox.clock import format_rfc3339, parse_rfc3339

CREDIT = "CREDIT"
DEBIT = "DEBIT"


@dataclass(frozen=True, slots=True)
class Movement:
    at: datetime
    ref: str  # stable line id: the same movement keeps its id across requests
    credit: bool
    category: str
    amount: Decimal
    end_to_end_id: str | None = None
    original_end_to_end_id: str | None = None
    idempotency_key: str | None = None
    txid: str | None = None
    infraction_id: str | None = None

    @property
    def signed(self) -> Decimal:
        return self.amount if self.credit else -self.amount


def _instant(text: Any) -> datetime:
    parsed = parse_rfc3339(text) if isinstance(text, str) else None
    if parsed is None:
        raise ValueError(f"unreadable timestamp in the ledger: {text!r}")
    return parsed


def pix_movements(pix_bodies: Iterable[Mapping[str, Any]]) -> Iterator[Movement]:
    """Credits for Pix received and debits for the refunds (devolucoes) actually paid."""
    for pix in pix_bodies:
        e2e = str(pix["endToEndId"])
        txid = pix.get("txid")
        yield Movement(
            at=_instant(pix["horario"]),
            ref=f"PIX_IN-{e2e}",
            credit=True,
            category="PIX_RECEIVED",
            amount=Decimal(pix["valor"]),
            end_to_end_id=e2e,
            txid=txid,
        )
        refunds = pix.get("devolucoes") or []
        for refund in refunds if isinstance(refunds, list) else [refunds]:
            # Only a settled refund moved money; EM_PROCESSAMENTO or NAO_REALIZADO did not.
            if refund.get("status") != "DEVOLVIDO":
                continue
            horario = refund.get("horario") or {}
            yield Movement(
                at=_instant(horario.get("liquidacao") or horario.get("solicitacao")),
                ref=f"PIX_RETURN-{refund['rtrId']}",
                credit=False,
                category="PIX_REFUND_SENT",
                amount=Decimal(refund["valor"]),
                end_to_end_id=str(refund["rtrId"]),
                original_end_to_end_id=e2e,
                txid=txid,
            )


def ordered(movements: Iterable[Movement]) -> list[Movement]:
    return sorted(movements, key=lambda m: (m.at, m.ref))


def balance_of(opening: Decimal, movements: Iterable[Movement]) -> Decimal:
    return opening + sum((m.signed for m in movements), Decimal(0))


def statement_lines(
    opening: Decimal,
    movements: Iterable[Movement],
    start: datetime | None = None,
    end: datetime | None = None,
) -> list[dict[str, Any]]:
    """Lines with ``start <= createdAt < end``; ``balanceAfter`` runs over all history.

    The window is half-open so consecutive business days never share a line.
    """
    balance = opening
    lines: list[dict[str, Any]] = []
    for m in ordered(movements):
        balance += m.signed
        if (start is not None and m.at < start) or (end is not None and m.at >= end):
            continue
        lines.append(
            {
                "id": m.ref,
                "type": CREDIT if m.credit else DEBIT,
                "category": m.category,
                "amount": m.amount,
                "balanceAfter": balance,
                "endToEndId": m.end_to_end_id,
                "originalEndToEndId": m.original_end_to_end_id,
                "idempotencyKey": m.idempotency_key,
                "txId": m.txid,
                "infractionId": m.infraction_id,
                "createdAt": format_rfc3339(m.at),
            }
        )
    return lines
