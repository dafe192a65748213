"""Money movements of the merchant's account and the statement built from them.

The statement is derived, never stored: Pix received and refunds sent come from the
shared QR code ledger (with the provider's fee on each, when it charges one), payouts and
their refunds from the payment book, MED debits from the infraction book. Deriving it on
each request means the balance always equals the opening balance plus the lines, whatever
the QR side did meanwhile (including Pix booked with a past ``horario``, which then shifts
the ``balanceAfter`` of later lines).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Final, Literal

from sandbox.clock import format_rfc3339, parse_rfc3339

CREDIT = "CREDIT"
DEBIT = "DEBIT"
PIX_RECEIVED_FEE: Final = "PIX_RECEIVED_FEE"

# How the provider books its fee on a Pix received: a DEBIT line of its own right after
# the Pix's credit ("line"), or taken off the credit line itself ("netted").
FeeBooking = Literal["line", "netted"]
FEE_BOOKINGS: Final = ("line", "netted")


@dataclass(frozen=True, slots=True)
class PixFee:
    """The provider's tariff (tarifa) per Pix received: ``amount`` (at most the Pix's)."""

    amount: Decimal
    booking: FeeBooking = "line"

    def on(self, pix_amount: Decimal) -> Decimal:
        """The fee charged on a Pix of ``pix_amount``: never more than the Pix itself."""
        return min(self.amount, pix_amount)


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
    # A fee netted from this credit: ``amount`` is then the Pix's value minus ``fee``.
    fee: Decimal | None = None
    gross: Decimal | None = None
    # The line this one is booked right after, at the same instant (a fee line's Pix).
    follows: str | None = None

    @property
    def signed(self) -> Decimal:
        return self.amount if self.credit else -self.amount


def _instant(text: Any) -> datetime:
    parsed = parse_rfc3339(text) if isinstance(text, str) else None
    if parsed is None:
        raise ValueError(f"unreadable timestamp in the ledger: {text!r}")
    return parsed


def _received(
    pix: Mapping[str, Any], tariff: PixFee | None, booked_at: datetime | None
) -> Iterator[Movement]:
    """The credit of a Pix received and, if the provider charges one, its fee; both at
    ``booked_at`` when the provider books the Pix later than it happened."""
    e2e = str(pix["endToEndId"])
    txid = pix.get("txid")
    at = booked_at if booked_at is not None else _instant(pix["horario"])
    value = Decimal(pix["valor"])
    ref = f"PIX_IN-{e2e}"
    fee = tariff.on(value) if tariff is not None else Decimal(0)
    netted = bool(fee) and tariff is not None and tariff.booking == "netted"
    yield Movement(
        at=at,
        ref=ref,
        credit=True,
        category="PIX_RECEIVED",
        amount=value - fee if netted else value,
        end_to_end_id=e2e,
        txid=txid,
        fee=fee if netted else None,
        gross=value if netted else None,
    )
    if fee and not netted:
        yield Movement(
            at=at,
            ref=f"PIX_FEE-{e2e}",
            credit=False,
            category=PIX_RECEIVED_FEE,
            amount=fee,
            end_to_end_id=e2e,
            txid=txid,
            follows=ref,
        )


def pix_movements(
    pix_bodies: Iterable[Mapping[str, Any]],
    fees: Mapping[str, PixFee | None] | None = None,
    booked_at: Mapping[str, datetime] | None = None,
) -> Iterator[Movement]:
    """Credits for Pix received (and the provider's fees on them: ``fees`` maps an
    endToEndId to the tariff it was booked under) and debits for the refunds
    (devolucoes) actually paid. ``booked_at`` maps the endToEndId of a Pix the statement
    books later than its ``horario`` to that instant."""
    for pix in pix_bodies:
        e2e = str(pix["endToEndId"])
        txid = pix.get("txid")
        tariff = fees.get(e2e) if fees is not None else None
        yield from _received(pix, tariff, booked_at.get(e2e) if booked_at is not None else None)
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


def _order(m: Movement) -> tuple[datetime, str, bool]:
    # A line that follows another sorts right after it, whatever its own id.
    return (m.at, m.follows or m.ref, m.follows is not None)


def ordered(movements: Iterable[Movement]) -> list[Movement]:
    return sorted(movements, key=_order)


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
        line: dict[str, Any] = {
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
        if m.fee is not None:
            line["feeAmount"] = m.fee
            line["grossAmount"] = m.gross
        lines.append(line)
    return lines
