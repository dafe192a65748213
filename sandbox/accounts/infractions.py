"""MED infractions (``infrações``): a payer's PSP disputes a Pix the merchant received.

A case opens (OPEN) and later closes (CLOSED). Closing it AGREED debits the disputed
amount from the merchant (a DEBIT line in the statement); DISAGREED moves nothing.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Final

from sandbox.accounts.statement import Movement
from sandbox.clock import Clock, format_rfc3339, to_millis

_CENT: Final = Decimal("0.01")
STATUSES: Final = frozenset({"OPEN", "CLOSED"})


@dataclass(slots=True)
class _Infraction:
    id: str
    end_to_end_id: str
    amount: Decimal
    reason: str
    created_at: datetime
    status: str = "OPEN"
    analysis_result: str | None = None
    closed_at: datetime | None = None

    @property
    def debited(self) -> bool:
        return self.analysis_result == "AGREED"


class InfractionBook:
    def __init__(self, *, clock: Clock) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._by_id: dict[str, _Infraction] = {}

    def open(self, end_to_end_id: str, amount: Decimal, reason: str) -> dict[str, Any]:
        now = to_millis(self._clock())
        with self._lock:
            case = _Infraction(
                f"inf-{len(self._by_id) + 1:06d}", end_to_end_id, amount, reason, now
            )
            self._by_id[case.id] = case
            return self._render(case)

    def close(self, infraction_id: str, *, debit: bool) -> dict[str, Any]:
        with self._lock:
            case = self._by_id[infraction_id]
            if case.status != "OPEN":
                raise ValueError(f"infraction {infraction_id} is already {case.status}")
            case.status = "CLOSED"
            case.analysis_result = "AGREED" if debit else "DISAGREED"
            case.closed_at = to_millis(self._clock())
            return self._render(case)

    def get(self, infraction_id: str) -> dict[str, Any] | None:
        with self._lock:
            case = self._by_id.get(infraction_id)
            return self._render(case) if case is not None else None

    def query(
        self,
        *,
        status: str | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
    ) -> list[dict[str, Any]]:
        """Cases in creation order; ``start <= createdAt < end`` when given."""
        with self._lock:
            return [
                self._render(c)
                for c in self._by_id.values()
                if (status is None or c.status == status)
                and (start is None or c.created_at >= start)
                and (end is None or c.created_at < end)
            ]

    def movements(self) -> list[Movement]:
        with self._lock:
            return [
                Movement(
                    at=c.closed_at,
                    ref=f"MED-{c.id}",
                    credit=False,
                    category="INFRACTION_DEBIT",
                    amount=c.amount,
                    original_end_to_end_id=c.end_to_end_id,
                    infraction_id=c.id,
                )
                for c in self._by_id.values()
                if c.debited and c.closed_at is not None
            ]

    def _render(self, c: _Infraction) -> dict[str, Any]:
        return {
            "id": c.id,
            "status": c.status,
            "endToEndId": c.end_to_end_id,
            "amount": c.amount.quantize(_CENT),
            "reason": c.reason,
            "analysisResult": c.analysis_result,
            "debitedAmount": c.amount.quantize(_CENT) if c.debited else Decimal("0.00"),
            "createdAt": format_rfc3339(c.created_at),
            "closedAt": format_rfc3339(c.closed_at) if c.closed_at is not None else None,
        }
