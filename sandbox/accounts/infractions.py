"""MED infractions (``infrações``): a payer's PSP disputes a Pix the merchant received.

A case opens (OPEN) and later closes (CLOSED). Closing it AGREED debits the disputed
amount from the merchant (a DEBIT line in the statement); DISAGREED moves nothing. When
it opens, the provider may block part or all of the disputed amount as a precaution: the
money stays in the account (no statement line), unavailable, while the case is analysed
within the MED's analysis period (``analysisDeadline``).
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, Final, Literal

from sandbox.accounts.statement import Movement
from sandbox.clock import Clock, format_rfc3339, to_millis

_CENT: Final = Decimal("0.01")
STATUSES: Final = frozenset({"OPEN", "CLOSED"})
# The receiving PSP's time to analyse a MED case (Regulamento Pix).
ANALYSIS_PERIOD: Final = timedelta(days=7)
# What the statement's debit line names: the case and the disputed Pix (``full``), only
# the disputed Pix's endToEndId, or nothing but the amount and category (``bare``), as
# different providers book MED debits.
DebitLine = Literal["full", "end_to_end_id", "bare"]
DEBIT_LINES: Final = ("full", "end_to_end_id", "bare")


@dataclass(slots=True)
class _Infraction:
    id: str
    end_to_end_id: str
    amount: Decimal
    reason: str
    created_at: datetime
    blocked: Decimal = Decimal(0)
    status: str = "OPEN"
    analysis_result: str | None = None
    closed_at: datetime | None = None
    debit_line: DebitLine = "full"

    @property
    def debited(self) -> bool:
        return self.analysis_result == "AGREED"


class InfractionBook:
    def __init__(self, *, clock: Clock) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._by_id: dict[str, _Infraction] = {}

    def open(
        self,
        end_to_end_id: str,
        amount: Decimal,
        reason: str,
        *,
        blocked: Decimal = Decimal(0),
    ) -> dict[str, Any]:
        if not Decimal(0) <= blocked <= amount:
            raise ValueError("the blocked amount must be between zero and the disputed amount")
        now = to_millis(self._clock())
        with self._lock:
            # Unique beyond this run, as a provider's ids are (``payments._payment_id``).
            number = f"{now:%y%m%d%H%M%S}{(len(self._by_id) + 1) % 1000:03d}"
            case = _Infraction(f"inf-{number}", end_to_end_id, amount, reason, now, blocked)
            self._by_id[case.id] = case
            return self._render(case)

    def close(
        self, infraction_id: str, *, debit: bool, debit_line: DebitLine = "full"
    ) -> dict[str, Any]:
        if debit_line not in DEBIT_LINES:
            raise ValueError(f"a debit line is one of {', '.join(DEBIT_LINES)}")
        with self._lock:
            case = self._by_id[infraction_id]
            if case.status != "OPEN":
                raise ValueError(f"infraction {infraction_id} is already {case.status}")
            case.status = "CLOSED"
            case.analysis_result = "AGREED" if debit else "DISAGREED"
            case.closed_at = to_millis(self._clock())
            case.debit_line = debit_line
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
                _debit(c, c.closed_at)
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
            "blockedAmount": c.blocked.quantize(_CENT),
            "createdAt": format_rfc3339(c.created_at),
            "analysisDeadline": format_rfc3339(c.created_at + ANALYSIS_PERIOD),
            "closedAt": format_rfc3339(c.closed_at) if c.closed_at is not None else None,
        }


def _debit(case: _Infraction, at: datetime) -> Movement:
    """The statement's debit line of a case closed AGREED, naming as much of the case as
    its ``debit_line`` says."""
    if case.debit_line == "full":
        return Movement(
            at=at,
            ref=f"MED-{case.id}",
            credit=False,
            category="INFRACTION_DEBIT",
            amount=case.amount,
            original_end_to_end_id=case.end_to_end_id,
            infraction_id=case.id,
        )
    # A line id of its own that does not spell the case's id (the line must not name it).
    digest = hashlib.sha256(case.id.encode()).hexdigest()[:20]
    return Movement(
        at=at,
        ref=f"DEB-{digest}",
        credit=False,
        category="INFRACTION_DEBIT",
        amount=case.amount,
        end_to_end_id=case.end_to_end_id if case.debit_line == "end_to_end_id" else None,
    )
