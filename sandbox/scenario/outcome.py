"""The ground truth of a scenario run: what really happened and what was delivered how.

Tests compare a receiver's records with this. Amounts are integer centavos, instants are
aware UTC; ``ref`` is always the scenario's own name for a thing, ``key`` the provider's
identifier (endToEndId, rtrId, idempotency key, infraction id).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

Channel = Literal["pix", "rec", "cobr", "accounts"]
MovementKind = Literal["pix_received", "pix_refund", "payout", "payout_return", "infraction_debit"]
FaultName = Literal["none", "drop", "duplicate", "delay"]

# The provider's statement category of each kind of movement (sandbox.accounts.statement).
STATEMENT_CATEGORY: Final[Mapping[str, str]] = {
    "pix_received": "PIX_RECEIVED",
    "pix_refund": "PIX_REFUND_SENT",
    "payout": "PIX_PAYMENT",
    "payout_return": "PIX_PAYMENT_REFUND",
    "infraction_debit": "INFRACTION_DEBIT",
}
# The category of a fee booked as a line of its own (``fees.booking`` = ``line``).
FEE_CATEGORY: Final = "PIX_RECEIVED_FEE"


@dataclass(frozen=True, slots=True)
class Movement:
    """A Pix in or out, a refund, a payout or its return, a MED debit — in its final state.

    ``booked`` says whether money moved (a settled refund, a LIQUIDATED payout...); only
    booked movements count in the totals and appear in the statement.
    """

    ref: str
    kind: MovementKind
    key: str  # endToEndId | rtrId | idempotency key | return endToEndId | infraction id
    amount_cents: int
    status: str
    booked: bool
    credit: bool
    at: dt.datetime  # booked at (or requested at, when it never was)
    end_to_end_id: str | None = None
    txid: str | None = None
    original_end_to_end_id: str | None = None  # the Pix or payout it belongs to
    idempotency_key: str | None = None
    error_code: str | None = None
    charge: str | None = None  # ref of the charge or recurring charge it pays
    fee_cents: int = 0  # pix_received: the provider's fee on it (at most amount_cents)
    # pix_received: seconds between the Pix (``at``, its horario) and its statement line
    # (and its fee's), which may then fall on the next day.
    booked_after: int = 0
    # infraction_debit: what its statement line names (full | end_to_end_id | bare).
    debit_line: str | None = None

    @property
    def statement_category(self) -> str:
        return STATEMENT_CATEGORY[self.kind]

    @property
    def signed_cents(self) -> int:
        return self.amount_cents if self.credit else -self.amount_cents

    @property
    def booked_at(self) -> dt.datetime | None:
        """When the statement books it (the ``createdAt`` of its line); ``None`` when it
        never moved money."""
        if not self.booked:
            return None
        return self.at + dt.timedelta(seconds=self.booked_after)

    def on_statement_of(self, start: dt.datetime, end: dt.datetime) -> bool:
        """Whether its statement line falls in ``[start, end)``."""
        booked_at = self.booked_at
        return booked_at is not None and start <= booked_at < end


@dataclass(frozen=True, slots=True)
class NotificationRecord:
    """One notification (one item of one POST body) and what became of it.

    ``keys`` name what it is about: ``pix:{e2e}``, ``refund:{rtrId}:{status}``,
    ``rec:{idRec}:{status}``, ``cobr:{txid}:{status}:{attempts}``,
    ``accounts:{TYPE}:{idempotencyKey|id}:{status}[:r{returns}]``; ``identity`` joins them
    and is what ``sandbox.scenario.identity.identities_of`` reads back from a body.
    """

    id: str
    channel: Channel
    url: str
    identity: str
    keys: tuple[str, ...]
    source: str  # where the scenario says it (``events[3]``)
    at: dt.datetime  # scenario time of the event that caused it
    fault: FaultName
    forged: bool
    copies_planned: int
    copies_acknowledged: int
    positions: tuple[int, ...]  # indexes among all POSTs of the run, one per copy sent
    delay_seconds: float | None
    payload: Mapping[str, Any] = field(repr=False)  # the item as posted

    @property
    def delivered(self) -> bool:
        return self.copies_acknowledged > 0


@dataclass(frozen=True, slots=True)
class ApiFaultRecord:
    source: str
    at: dt.datetime
    api: str  # qrcode | accounts | both
    description: str
    position: int  # armed before this POST index (== number of POSTs sent before it)


@dataclass(frozen=True, slots=True)
class ExpectedPayment:
    """A charge (cob, cobv) or recurring charge and how the day left it, in the
    vocabulary of docs/design.md §5: paid, underpaid, overpaid, paid_twice, unpaid, expired,
    refunded, partially_refunded (settled refunds win over the payment outcome), judged
    against ``due_cents``."""

    ref: str
    kind: Literal["cob", "cobv", "cobr"]
    txid: str
    amount_cents: int  # valor.original
    # What was due when first paid (a cobv's fine, interest, abatement and discount
    # applied); the original when unpaid, and always for cob and cobr.
    due_cents: int
    paid_cents: int
    refunded_cents: int
    payments: tuple[str, ...]  # endToEndIds of the Pix that paid it
    outcome: str
    provider_status: str  # as GET /cob|cobv|cobr shows it at the end of the day


@dataclass(frozen=True, slots=True)
class InfractionRecord:
    """A MED case as the day left it. ``blocked_cents``: what the provider blocked when it
    opened (no money moved; it stays on the case once closed); ``analysis_deadline``: the
    end of the MED's analysis period (``opened_at`` + 7 days); ``debit_line``: what the
    statement's debit line names, when debited."""

    ref: str
    id: str
    end_to_end_id: str
    amount_cents: int
    status: str  # OPEN | CLOSED
    debited: bool
    blocked_cents: int = 0
    opened_at: dt.datetime | None = None
    analysis_deadline: dt.datetime | None = None
    debit_line: str | None = None  # full | end_to_end_id | bare, when debited

    @property
    def debited_cents(self) -> int:
        return self.amount_cents if self.debited else 0


@dataclass(frozen=True, slots=True)
class RecurrenceCycle:
    """A cycle of a recurrence that falls on the scenario's day (counted from
    ``calendario.dataInicial`` by its periodicity), and the recurring charges of that
    recurrence due within the cycle, from its date up to the day before the next cycle's
    (the BCB's rule: a charge belongs to the cycle its ``dataDeVencimento`` falls in):
    none means the merchant missed the cycle."""

    recurrence: str  # its ref
    id_rec: str
    periodicity: str
    start_date: dt.date  # calendario.dataInicial
    due_date: dt.date  # the cycle's date: the scenario's day
    next_date: dt.date  # the next cycle's date: the cycle ends the day before
    amount_cents: int | None  # valor.valorRec; None for a variable amount
    charges: tuple[str, ...]  # refs of its recurring charges due in [due_date, next_date)

    @property
    def missed(self) -> bool:
        return not self.charges


@dataclass(frozen=True, slots=True)
class DayTotals:
    """Booked money of the day, as the statement of the day (``[day_start, day_end)``)
    adds it up: a Pix booked on the next day (``booked_after``) is not in it, nor its fee.
    ``credits``: Pix received and payout returns; ``debits``: payouts, refunds sent and
    MED debits; ``refunds``: the refunds (devoluções) sent, a part of the debits.
    ``by_category`` uses the statement's categories.

    ``fees``: the provider's fees on the Pix received. Booked as lines of their own they
    are debits (category ``PIX_RECEIVED_FEE``); netted, the Pix's credits are net of them
    (and so is ``PIX_RECEIVED``)."""

    credits_cents: int
    debits_cents: int
    refunds_cents: int
    by_category: Mapping[str, int]
    fees_cents: int = 0

    @property
    def net_cents(self) -> int:
        return self.credits_cents - self.debits_cents


@dataclass(frozen=True, slots=True)
class ScenarioOutcome:
    name: str
    date: dt.date
    seed: int
    day_start: dt.datetime  # the business day in UTC, [day_start, day_end)
    day_end: dt.datetime
    opening_balance_cents: int
    # opening + credits - debits of the day's statement: the balance at day_end, the
    # balanceAfter of the day's last line.
    closing_balance_cents: int
    totals: DayTotals
    movements: tuple[Movement, ...]
    payments: tuple[ExpectedPayment, ...]
    infractions: tuple[InfractionRecord, ...]
    notifications: tuple[NotificationRecord, ...]
    api_faults: tuple[ApiFaultRecord, ...]
    refs: Mapping[str, str]  # scenario ref → provider id (e2e, rtrId, txid, idRec, ...)
    posts_sent: int
    # The balance once every movement is booked, the next day's lines of Pix booked late
    # included: what GET /accounts/balances answers after the run.
    final_balance_cents: int
    cycles: tuple[RecurrenceCycle, ...]  # recurrence cycles falling on the day

    def movement(self, ref: str) -> Movement:
        return next(m for m in self.movements if m.ref == ref)

    def movements_of(self, kind: MovementKind) -> tuple[Movement, ...]:
        return tuple(m for m in self.movements if m.kind == kind)

    @property
    def booked_next_day(self) -> tuple[Movement, ...]:
        """Movements of the day whose statement line falls after ``day_end`` (a Pix
        booked late across midnight): in the next day's statement, not in the totals."""
        return tuple(m for m in self.movements if m.booked_at and m.booked_at >= self.day_end)

    @property
    def missed_cycles(self) -> tuple[RecurrenceCycle, ...]:
        """Cycles due on the day with no recurring charge due within them."""
        return tuple(c for c in self.cycles if c.missed)

    @property
    def blocked_cents(self) -> int:
        """What the provider blocked for the day's MED cases still open at its end."""
        return sum(i.blocked_cents for i in self.infractions if i.status == "OPEN")

    def _with(self, fault: FaultName) -> tuple[NotificationRecord, ...]:
        return tuple(n for n in self.notifications if n.fault == fault)

    @property
    def dropped(self) -> tuple[NotificationRecord, ...]:
        return self._with("drop")

    @property
    def duplicated(self) -> tuple[NotificationRecord, ...]:
        return self._with("duplicate")

    @property
    def delayed(self) -> tuple[NotificationRecord, ...]:
        return self._with("delay")

    @property
    def forged(self) -> tuple[NotificationRecord, ...]:
        return tuple(n for n in self.notifications if n.forged)

    @property
    def forged_end_to_end_ids(self) -> tuple[str, ...]:
        return tuple(str(n.payload["endToEndId"]) for n in self.forged if n.channel == "pix")

    @property
    def forged_idempotency_keys(self) -> tuple[str, ...]:
        """Idempotency keys of forged transfers (a keyless one has none)."""
        return tuple(
            str(key)
            for n in self.forged
            if n.channel == "accounts" and (key := n.payload["data"].get("idempotencyKey"))
        )

    @property
    def forged_transfer_ids(self) -> tuple[str, ...]:
        """The ``id`` of every forged transfer, keyless ones included."""
        return tuple(str(n.payload["data"]["id"]) for n in self.forged if n.channel == "accounts")

    @property
    def notified_pix(self) -> frozenset[str]:
        """endToEndIds of real Pix some acknowledged notification carried."""
        return frozenset(
            key.removeprefix("pix:")
            for n in self.notifications
            if n.delivered and not n.forged
            for key in n.keys
            if key.startswith("pix:")
        )

    @property
    def pix_only_by_polling(self) -> tuple[str, ...]:
        """Pix received that no notification announced (no txid, or dropped): a receiver
        learns of them only from the API."""
        notified = self.notified_pix
        return tuple(m.key for m in self.movements_of("pix_received") if m.key not in notified)
