"""Every table of pixrecon, in one place (SQLModel: data models apart from table models).

Money is integer centavos; times are UTC (``timestamptz`` on PostgreSQL).
"""

from __future__ import annotations

import enum
from datetime import date, datetime

from sqlalchemy import (
    BigInteger,
    DateTime,
    Index,
    Integer,
    LargeBinary,
    Text,
    UniqueConstraint,
    text,
)
from sqlmodel import Field, SQLModel

from reconcile.timeutil import utcnow

# SQLite only auto-increments an INTEGER PRIMARY KEY; PostgreSQL gets a BIGINT identity.
IdType = BigInteger().with_variant(Integer(), "sqlite")
UtcDateTime = DateTime(timezone=True)


class Source(enum.StrEnum):
    WEBHOOK = "webhook"
    POLL = "poll"


class ItemStatus(enum.StrEnum):
    PENDING = "pending"  # committed, waiting for a worker
    PROCESSED = "processed"
    FAILED = "failed"  # permanent failure; `error` says why
    UNSUPPORTED = "unsupported"  # a kind pixrecon does not handle yet; kept and shown
    IGNORED = "ignored"  # an operator decided it needs no processing


class Confirmation(enum.StrEnum):
    """Whether the provider's API stands behind a notified movement (docs/design.md §1.5)."""

    PENDING = "pending"  # not yet looked up, or unknown to the API inside the grace period
    CONFIRMED = "confirmed"  # the API knows it, with the same amount
    UNCONFIRMED_WEBHOOK = "unconfirmed_webhook"  # still unknown after the grace period
    AMOUNT_MISMATCH = "amount_mismatch"  # the API knows it with another amount
    NOT_REQUIRED = "not_required"  # confirmation switched off by policy
    UNVERIFIABLE = "unverifiable"  # nothing to look it up by (e.g. a payout with no key)
    STATUS_MISMATCH = "status_mismatch"  # the API knows it in another final state

    @classmethod
    def counted(cls) -> tuple[str, ...]:
        """The confirmations under which a movement's money counts."""
        return (cls.CONFIRMED.value, cls.NOT_REQUIRED.value)

    @classmethod
    def stated(cls) -> tuple[str, ...]:
        """The confirmations under which some amount of a movement counts: the counted
        ones, at the notified amount, and ``amount_mismatch``, at the amount the API
        states (``confirmed_amount_cents``): the API's amount replaces the webhook's."""
        return (*cls.counted(), cls.AMOUNT_MISMATCH.value)


class CaseState(enum.StrEnum):
    """Where a person's work on an exception case stands."""

    OPEN = "open"  # raised by a run, nobody on it yet
    ACKNOWLEDGED = "acknowledged"  # someone is on it; it still counts as remaining
    RESOLVED = "resolved"  # a person closed it with a note; re-runs keep it resolved
    CLEARED = "cleared"  # the newest run of its day no longer raises it

    @classmethod
    def remaining(cls) -> tuple[CaseState, ...]:
        """The states that still count against the day."""
        return (cls.OPEN, cls.ACKNOWLEDGED)


class ItemKind(enum.StrEnum):
    PIX = "pix"
    PIX_REFUND = "pix_refund"
    REC = "rec"
    COBR = "cobr"
    ACCOUNTS_TRANSFER = "accounts.transfer"
    ACCOUNTS_RECEIVE = "accounts.receive"
    ACCOUNTS_REFUND = "accounts.refund"
    ACCOUNTS_CASHOUT = "accounts.cashout"
    ACCOUNTS_INFRACTION = "accounts.infraction"
    ACCOUNTS_STATEMENT = "accounts.statement"
    CHARGE = "charge"
    ACCOUNTS_BALANCE = "accounts.balance"
    UNSUPPORTED = "unsupported"


# A path longer than this is stored cut (``stored_route``): the route column is bounded,
# and refusing a delivery for the length of the URL it came to would lose it.
ROUTE_MAX = 200


def stored_route(path: str) -> str:
    """The path as a column holds it: cut to its length, and a NUL (``%00``), which no
    PostgreSQL text holds, written as U+FFFD."""
    path = path.replace("\x00", "\ufffd")
    return path if len(path) <= ROUTE_MAX else path[: ROUTE_MAX - 1] + "…"


class WebhookDeliveryBase(SQLModel):
    route: str = Field(max_length=ROUTE_MAX)
    remote_addr: str | None = Field(default=None, max_length=64)
    headers: str = Field(sa_type=Text, description="selected request headers, JSON")
    item_count: int = 0


class WebhookDelivery(WebhookDeliveryBase, table=True):
    """One HTTP delivery exactly as it arrived: the forensic record behind inbox items."""

    __tablename__ = "webhook_delivery"

    id: int | None = Field(default=None, primary_key=True, sa_type=IdType)
    received_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime)
    body: bytes = Field(sa_type=LargeBinary)


class InboxItemBase(SQLModel):
    source: str = Field(max_length=16, description="webhook | poll (Source)")
    kind: str = Field(max_length=40)
    key: str = Field(
        max_length=200, description="business key, unique per item (docs/design.md §4)"
    )
    payload: str = Field(sa_type=Text, description="the item's JSON as received")


class InboxItem(InboxItemBase, table=True):
    """One business item (a Pix, a refund status, …), however many times it was delivered."""

    __tablename__ = "inbox_item"
    __table_args__ = (
        UniqueConstraint("key", name="uq_inbox_item_key"),
        Index("ix_inbox_item_status_received", "status", "received_at"),
        # Only the few items a conflicting repeat flagged: the nightly run looks up a
        # day's without reading the inbox (migration 0033).
        Index(
            "ix_inbox_item_conflicted",
            "conflicted_at",
            postgresql_where=text("conflicted_at IS NOT NULL"),
            sqlite_where=text("conflicted_at IS NOT NULL"),
        ),
    )

    id: int | None = Field(default=None, primary_key=True, sa_type=IdType)
    status: str = Field(default=ItemStatus.PENDING.value, max_length=16)
    delivery_id: int | None = Field(
        default=None, foreign_key="webhook_delivery.id", sa_type=BigInteger
    )
    received_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime)
    webhook_at: datetime | None = Field(default=None, sa_type=UtcDateTime)
    poll_at: datetime | None = Field(default=None, sa_type=UtcDateTime)
    last_seen_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime)
    # Sightings, so that duplicates are counted rather than re-processed.
    webhook_count: int = 0
    poll_count: int = 0
    dispatched_at: datetime | None = Field(default=None, sa_type=UtcDateTime)
    processed_at: datetime | None = Field(default=None, sa_type=UtcDateTime)
    attempts: int = 0
    error: str | None = Field(default=None, sa_type=Text)
    warnings: str | None = Field(
        default=None,
        sa_type=Text,
        description="fields read otherwise than documented: JSON [{pointer, expected}]",
    )
    # A webhook repeat of the key with another digest is flagged (``reconcile/inbox.py``).
    content_digest: str | None = Field(
        default=None,
        max_length=32,
        description="MD5 of the amount a Pix or a refund states (else none)",
    )
    # The first such repeat: when it came (the day whose nightly run makes it an
    # exception) and the money it stated. None on items flagged before they were kept.
    conflicted_at: datetime | None = Field(
        default=None,
        sa_type=UtcDateTime,
        description="when a repeat stating other money first flagged the item",
    )
    conflict_amount_cents: int | None = Field(
        default=None,
        sa_type=BigInteger,
        description="the money that repeat stated (null when it could not be read)",
    )

    @property
    def duplicates(self) -> int:
        """Webhook deliveries beyond the first (poll sightings are not duplicates)."""
        return max(self.webhook_count - 1, 0)


class InboxRef(SQLModel, table=True):
    """Every reference an item carries (endToEndId, txid, rtrId, idRec, idempotencyKey,
    the provider's id), so any of them finds the item (``reconcile/payloads/refs.py``)."""

    __tablename__ = "inbox_ref"

    ref: str = Field(primary_key=True, max_length=100)
    # No foreign key on purpose: written with the item in its transaction, and a check
    # per row would cost every delivery's acknowledgement. Indexed for retention, which
    # deletes an item's references by the item.
    item_id: int = Field(primary_key=True, sa_type=BigInteger, index=True)


class DeliveryItem(SQLModel, table=True):
    """A webhook delivery that carried an item again (the one that first brought it is the
    item's ``delivery_id``), so that every delivery mentioning an item can be listed."""

    __tablename__ = "delivery_item"

    item_id: int = Field(primary_key=True, sa_type=BigInteger)
    # Written with the delivery and its items; no foreign key, as for ``inbox_ref``.
    delivery_id: int = Field(primary_key=True, sa_type=BigInteger)


class Confirmable(SQLModel):
    """Money counts only once confirmed: a webhook is a trigger, not proof. Rows that came
    from the API itself (polling) are confirmed on arrival."""

    confirmation: str = Field(default=Confirmation.PENDING.value, max_length=24, index=True)
    confirmed_amount_cents: int | None = Field(default=None, sa_type=BigInteger)
    confirmed_at: datetime | None = Field(default=None, sa_type=UtcDateTime)
    next_check_at: datetime | None = Field(default=None, sa_type=UtcDateTime)
    check_attempts: int = 0


class PixReceivedBase(SQLModel):
    end_to_end_id: str = Field(max_length=32)
    txid: str | None = Field(default=None, max_length=35, index=True)
    amount_cents: int | None = Field(
        default=None,
        sa_type=BigInteger,
        description="null while the notified amount is unreadable; the API's once confirmed",
    )
    horario: datetime | None = Field(default=None, sa_type=UtcDateTime, index=True)
    horario_raw: str | None = Field(default=None, max_length=64)
    chave: str | None = Field(default=None, max_length=77)
    info_pagador: str | None = Field(default=None, sa_type=Text)
    payer_document: str | None = Field(default=None, max_length=14)
    payer_name: str | None = Field(default=None, max_length=200)
    components: str | None = Field(
        default=None, sa_type=Text, description="componentesValor as received, JSON"
    )


class PixReceived(PixReceivedBase, Confirmable, table=True):
    """A Pix credited to the merchant, one row per ``endToEndId``."""

    __tablename__ = "pix_received"
    __table_args__ = (
        UniqueConstraint("end_to_end_id", name="uq_pix_received_e2e"),
        # When the Pix happened, as every matcher of a day asks for it
        # (``reconcile.matching.movements.pix_time``): a day's run then reads that day's
        # rows, not every day the table keeps (migration 0019).
        Index("ix_pix_received_happened", text("coalesce(horario, created_at)")),
    )

    id: int | None = Field(default=None, primary_key=True, sa_type=IdType)
    # Indexed: deleting an inbox item (retention) checks every table pointing at it.
    inbox_item_id: int = Field(foreign_key="inbox_item.id", sa_type=BigInteger, index=True)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime)


class LatestState(SQLModel):
    """Columns of every domain table that holds the latest known state of a business
    object. Notifications arrive unordered, so each row carries the ``rank`` of its status
    (or update time) and an older fact never overwrites a newer one."""

    id: int | None = Field(default=None, primary_key=True, sa_type=IdType)
    rank: int = Field(default=0, sa_type=BigInteger)
    # Indexed: deleting an inbox item (retention) checks every table pointing at it.
    inbox_item_id: int = Field(foreign_key="inbox_item.id", sa_type=BigInteger, index=True)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime)


class PixRefundBase(SQLModel):
    end_to_end_id: str = Field(max_length=32, description="the refunded Pix")
    refund_id: str = Field(max_length=35, description="the merchant's refund id")
    rtr_id: str | None = Field(default=None, max_length=32, index=True)
    amount_cents: int | None = Field(
        default=None,
        sa_type=BigInteger,
        description="null while the notified amount is unreadable; the API's once confirmed",
    )
    natureza: str | None = Field(default=None, max_length=32)
    status: str = Field(max_length=32)
    motivo: str | None = Field(default=None, sa_type=Text)
    requested_at: datetime | None = Field(default=None, sa_type=UtcDateTime)
    settled_at: datetime | None = Field(default=None, sa_type=UtcDateTime)


class PixRefund(PixRefundBase, LatestState, Confirmable, table=True):
    """A refund (devolução) of a received Pix, in its latest known status."""

    __tablename__ = "pix_refund"
    __table_args__ = (UniqueConstraint("end_to_end_id", "refund_id", name="uq_pix_refund"),)

    confirmed_status: str | None = Field(
        default=None,
        max_length=32,
        description="the final status the provider's API states of a refund whose notified "
        "one it contradicts (status_mismatch); none before it was kept",
    )


class AccountMovementBase(SQLModel):
    type: str = Field(max_length=16, description="TRANSFER, RECEIVE, REFUND or CASHOUT")
    reference: str = Field(max_length=100, description="id, else idempotencyKey, else e2e")
    movement_id: str | None = Field(default=None, max_length=100)
    idempotency_key: str | None = Field(default=None, max_length=100, index=True)
    end_to_end_id: str | None = Field(default=None, max_length=64, index=True)
    status: str = Field(max_length=32)
    error_code: str | None = Field(default=None, max_length=32)
    message: str | None = Field(default=None, sa_type=Text)
    amount_cents: int | None = Field(default=None, sa_type=BigInteger)
    refunded_cents: int = Field(default=0, sa_type=BigInteger)
    credit_debit_type: str | None = Field(default=None, max_length=16)
    txid: str | None = Field(default=None, max_length=35)
    provider_created_at: datetime | None = Field(default=None, sa_type=UtcDateTime)
    moved_at: datetime | None = Field(
        default=None,
        sa_type=UtcDateTime,
        description="initiated after it was created (a scheduled Pix): when, from its "
        "endToEndId; the day its money moved",
    )


class AccountMovement(AccountMovementBase, LatestState, Confirmable, table=True):
    """A movement notified by the accounts API (cash-outs, credits, refunds)."""

    __tablename__ = "account_movement"
    __table_args__ = (UniqueConstraint("type", "reference", name="uq_account_movement"),)

    outcome_seen_at: datetime | None = Field(
        default=None,
        sa_type=UtcDateTime,
        description="when its outcome (paid out, rejected, canceled) was received, for a "
        "payout stored as processing before",
    )
    processing_seen_at: datetime | None = Field(
        default=None,
        sa_type=UtcDateTime,
        description="when the processing state its outcome replaced had been received",
    )
    first_seen_at: datetime | None = Field(
        default=None,
        sa_type=UtcDateTime,
        description="when the first notification or poll of it was received",
    )
    # A notification may replace a state the API had confirmed (an outcome ranks alike
    # whatever it is): the API's word must survive it, or the money it stands behind
    # stops counting while the notification it contradicts is judged.
    confirmed_status: str | None = Field(
        default=None,
        max_length=32,
        description="the status the provider's API states of a payout whose notified one it "
        "contradicts (status_mismatch): the state it counts as",
    )


class PayoutReturnBase(SQLModel):
    payout_key: str = Field(
        max_length=100, index=True, description="the payout's idempotencyKey, else its reference"
    )
    ref: str = Field(
        max_length=120, description="the return's endToEndId, else the payout key and its place"
    )
    end_to_end_id: str | None = Field(default=None, max_length=64)
    status: str | None = Field(default=None, max_length=32)
    amount_cents: int | None = Field(
        default=None, sa_type=BigInteger, description="as the latest notification listed it"
    )
    confirmed_amount_cents: int | None = Field(
        default=None,
        sa_type=BigInteger,
        description="as the provider's API states it, once a look-up or poll of its payout "
        "listed it; 0 when the API lists it as not made",
    )
    returned_at: datetime = Field(
        sa_type=UtcDateTime,
        index=True,
        description="refunds[].createdAt, else when a notification or poll first listed it",
    )


class PayoutReturn(PayoutReturnBase, LatestState, table=True):
    """One return of a settled payout (the receiver sent money back): a movement of the
    day it happened, whatever the day of the payout it returns. A payout's notification
    lists its returns (``refunds[]``); each is kept here once, so that each day counts the
    returns of that day, and a payout's own day judges it as of its end."""

    __tablename__ = "payout_return"
    __table_args__ = (UniqueConstraint("ref", name="uq_payout_return"),)


class InfractionBase(SQLModel):
    infraction_id: str = Field(max_length=100)
    status: str = Field(max_length=32)
    amount_cents: int | None = Field(default=None, sa_type=BigInteger)
    end_to_end_id: str | None = Field(default=None, max_length=64)
    debited_cents: int | None = Field(
        default=None, sa_type=BigInteger, description="what the provider says it debited"
    )
    provider_updated_at: datetime | None = Field(
        default=None, sa_type=UtcDateTime, description="closedAt, else createdAt"
    )
    blocked_cents: int | None = Field(
        default=None, sa_type=BigInteger, description="held by a cautionary block (MED)"
    )
    opened_at: datetime | None = Field(default=None, sa_type=UtcDateTime)
    deadline_at: datetime | None = Field(
        default=None, sa_type=UtcDateTime, description="when the case's analysis must end"
    )
    # A notification saying a case closed is a trigger, not proof (docs/design.md §1.5):
    # its debit counts once the provider's API states the closing, and what the API
    # states is kept beside what was notified (``debited_cents``).
    confirmation: str | None = Field(
        default=None,
        max_length=24,
        description="of the case's closing: pending while a notification's closing waits "
        "for the API; none for a case still open",
    )
    confirmed_debited_cents: int | None = Field(
        default=None, sa_type=BigInteger, description="the debit the provider's API states"
    )


# A MED case in these is still open: its money is at risk.
OPEN_INFRACTION_STATES = ("OPEN", "ACKNOWLEDGED")
# A notified case the provider's API answers it does not know (a possible forgery): no
# money of it is at risk. Any later word of the provider's about it replaces this (rank 0).
UNKNOWN_INFRACTION_STATE = "UNKNOWN_TO_PROVIDER"


class Infraction(InfractionBase, LatestState, table=True):
    """A MED infraction case as notified (details are fetched from the API)."""

    __tablename__ = "infraction"
    __table_args__ = (UniqueConstraint("infraction_id", name="uq_infraction"),)

    # A closing's look-up that fails is tried again later, spaced out as every confirmed
    # row's is (``reconcile.confirmation``), so the cases behind it are asked meanwhile.
    next_check_at: datetime | None = Field(default=None, sa_type=UtcDateTime)
    check_attempts: int = 0


class RecurrenceBase(SQLModel):
    id_rec: str = Field(max_length=35)
    status: str = Field(max_length=32)
    status_at: datetime | None = Field(default=None, sa_type=UtcDateTime)
    start_date: date | None = Field(default=None, description="calendario.dataInicial")
    end_date: date | None = Field(default=None, description="calendario.dataFinal")
    periodicity: str | None = Field(
        default=None, max_length=16, description="calendario.periodicidade"
    )
    amount_cents: int | None = Field(
        default=None, sa_type=BigInteger, description="valor.valorRec; none: variable"
    )


class StatedByApi(SQLModel):
    """A Pix Automático object's status is a claim when notified: the matchers count the
    one the provider's API last stated."""

    confirmed_status: str | None = Field(
        default=None,
        max_length=32,
        description="the status the provider's API last stated (a notification's is a claim)",
    )
    confirmed_status_at: datetime | None = Field(
        default=None, sa_type=UtcDateTime, description="when it took it, as the API states"
    )


class Recurrence(RecurrenceBase, StatedByApi, LatestState, Confirmable, table=True):
    """A Pix Automático recurrence (the payer's authorisation). ``status`` and the calendar
    are the latest notified or polled; a notification's wait for the API's look-up."""

    __tablename__ = "recurrence"
    __table_args__ = (UniqueConstraint("id_rec", name="uq_recurrence"),)


class RecurringChargeBase(SQLModel):
    txid: str = Field(max_length=35)
    id_rec: str | None = Field(default=None, max_length=35, index=True)
    status: str = Field(max_length=32)
    attempts: int = 0
    last_attempt_status: str | None = Field(default=None, max_length=32)
    last_attempt_end_to_end_id: str | None = Field(default=None, max_length=32)
    status_at: datetime | None = Field(default=None, sa_type=UtcDateTime)


class RecurringCharge(RecurringChargeBase, StatedByApi, LatestState, Confirmable, table=True):
    """A Pix Automático recurring charge (cobr) and its collection attempts."""

    __tablename__ = "recurring_charge"
    __table_args__ = (UniqueConstraint("txid", name="uq_recurring_charge"),)


class DeniedClaim(SQLModel, table=True):
    """A Pix Automático notification the provider's API denied (unknown to it, or a state
    it says the object never took), as it was when denied. ``recurrence`` and
    ``recurring_charge`` keep only the latest state, which a later genuine notification
    overwrites: the day the denied one is about must still show it when asked again
    (``reconcile/matching/automatico.py``)."""

    __tablename__ = "denied_claim"
    __table_args__ = (
        # One per notification: a replayed item denied again is the same claim.
        UniqueConstraint("kind", "key", "inbox_item_id", name="uq_denied_claim"),
    )

    id: int | None = Field(default=None, primary_key=True, sa_type=IdType)
    kind: str = Field(max_length=8, description="rec or cobr")
    key: str = Field(max_length=35, description="idRec or txid")
    status: str = Field(max_length=32, description="the status notified")
    attempt_status: str | None = Field(
        default=None, max_length=32, description="a charge's last attempt, as notified"
    )
    attempt_end_to_end_id: str | None = Field(default=None, max_length=32)
    confirmation: str = Field(
        max_length=24, description="status_mismatch, unconfirmed_webhook or unverifiable"
    )
    confirmed_status: str | None = Field(
        default=None, max_length=32, description="the status the API stated, if it knew it"
    )
    amount_cents: int | None = Field(
        default=None, sa_type=BigInteger, description="the recurrence's or the charge's"
    )
    claimed_at: datetime = Field(
        sa_type=UtcDateTime,
        index=True,
        description="when the notification says its state came, never after it arrived: its day",
    )
    denied_at: datetime = Field(sa_type=UtcDateTime)
    # Indexed: deleting an inbox item (retention) checks every table pointing at it.
    inbox_item_id: int = Field(foreign_key="inbox_item.id", sa_type=BigInteger, index=True)


# A charge in these (or removed: REMOVIDA_PELO_USUARIO_RECEBEDOR, REMOVIDA_PELO_PSP) can no
# longer be paid; the BCB's charge says no time for it (``ExpectedPayment.ended_seen_at``).
ENDED_CHARGE_STATES = ("EXPIRADA", "REJEITADA", "CANCELADA")
REMOVED_CHARGE_PREFIX = "REMOVID"


class ExpectedPaymentBase(SQLModel):
    kind: str = Field(max_length=16, description="cob, cobv, cobr or invoice")
    ref: str = Field(max_length=100, description="txid, or the invoice id")
    amount_cents: int = Field(sa_type=BigInteger)
    status: str = Field(max_length=40, description="the provider's status of the charge")
    txid: str | None = Field(default=None, max_length=35, index=True)
    created_at_provider: datetime | None = Field(default=None, sa_type=UtcDateTime)
    expires_at: datetime | None = Field(
        default=None, sa_type=UtcDateTime, description="cob: creation + expiracao"
    )
    due_date: date | None = Field(default=None, description="cobv, cobr and invoices")
    payable_until: date | None = Field(
        default=None,
        description="cobv: the last day it can be paid, due date + validadeAposVencimento "
        "with each moved off a weekend",
    )
    terms: str | None = Field(
        default=None,
        sa_type=Text,
        description="cobv: valor's multa, juros, abatimento and desconto as received, JSON",
    )
    amount_due_cents: int | None = Field(
        default=None,
        sa_type=BigInteger,
        description="cobv: what was due on the day it was paid (terms applied)",
    )
    payer_request: str | None = Field(
        default=None, sa_type=Text, description="solicitacaoPagador: what the payer was shown"
    )
    debtor_document: str | None = Field(
        default=None, max_length=14, description="devedor's CPF or CNPJ (personal data)"
    )
    debtor_name: str | None = Field(
        default=None, max_length=200, description="devedor's name (personal data)"
    )
    ended_seen_at: datetime | None = Field(
        default=None,
        sa_type=UtcDateTime,
        description="when a status ending it unpaid (removed, expired, rejected, cancelled) "
        "was first received in place of an open one; null when first stored ended",
    )
    open_seen_at: datetime | None = Field(
        default=None,
        sa_type=UtcDateTime,
        description="when the open state that ended status replaced had been received",
    )


class ExpectedPayment(ExpectedPaymentBase, LatestState, table=True):
    """What the merchant expects to be paid: a charge or an invoice, polled from the API."""

    __tablename__ = "expected_payment"
    __table_args__ = (
        UniqueConstraint("kind", "ref", name="uq_expected_payment"),
        # The day's charges are those created or due that day (migration 0021).
        Index("ix_expected_payment_created", "created_at_provider"),
        Index("ix_expected_payment_due", "due_date"),
    )


class StatementEntryBase(SQLModel):
    entry_id: str = Field(max_length=100, description="the provider's statement line id")
    type: str = Field(max_length=16, description="CREDIT or DEBIT")
    category: str | None = Field(default=None, max_length=40)
    amount_cents: int = Field(sa_type=BigInteger, description="always positive; see type")
    balance_after_cents: int | None = Field(default=None, sa_type=BigInteger)
    end_to_end_id: str | None = Field(default=None, max_length=64, index=True)
    original_end_to_end_id: str | None = Field(default=None, max_length=64)
    idempotency_key: str | None = Field(default=None, max_length=100, index=True)
    txid: str | None = Field(default=None, max_length=35)
    infraction_id: str | None = Field(default=None, max_length=100)
    booked_at: datetime | None = Field(default=None, sa_type=UtcDateTime, index=True)
    fee_cents: int | None = Field(
        default=None, sa_type=BigInteger, description="a fee the provider netted from it"
    )


class StatementEntry(StatementEntryBase, table=True):
    """A line of the account statement, as polled from the accounts API."""

    __tablename__ = "statement_entry"
    __table_args__ = (UniqueConstraint("entry_id", name="uq_statement_entry"),)

    id: int | None = Field(default=None, primary_key=True, sa_type=IdType)
    # Indexed: deleting an inbox item (retention) checks every table pointing at it.
    inbox_item_id: int = Field(foreign_key="inbox_item.id", sa_type=BigInteger, index=True)


class BalanceSnapshot(SQLModel, table=True):
    """The available balance as the provider reported it at one moment."""

    __tablename__ = "balance_snapshot"
    __table_args__ = (UniqueConstraint("taken_at", name="uq_balance_snapshot"),)

    id: int | None = Field(default=None, primary_key=True, sa_type=IdType)
    taken_at: datetime = Field(sa_type=UtcDateTime)
    available_cents: int = Field(sa_type=BigInteger)
    # Indexed: deleting an inbox item (retention) checks every table pointing at it.
    inbox_item_id: int = Field(foreign_key="inbox_item.id", sa_type=BigInteger, index=True)


class UnreadItem(SQLModel, table=True):
    """An item a provider's listing sent that could not be read, kept until a later read
    of the same listing over its time reads it whole: the days it may belong to are not
    read whole until then (``reconcile/unread.py``). Where and why it could not be read,
    never its content (personal data)."""

    __tablename__ = "unread_item"

    id: int | None = Field(default=None, primary_key=True, sa_type=IdType)
    listing: str = Field(max_length=16, description="statement, pix, cob, cobv, cobr, rec, …")
    item_key: str | None = Field(
        default=None, max_length=100, description="the item's id as listed, when readable"
    )
    reason: str = Field(sa_type=Text, description="where and why it could not be read")
    at_from: datetime = Field(
        sa_type=UtcDateTime,
        index=True,
        description="when it happened, as far as known: its own time when readable, else "
        "the window its listing was read over (at_from to at_until)",
    )
    at_until: datetime = Field(sa_type=UtcDateTime)
    seen_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime)


class QuarantinedDelivery(SQLModel, table=True):
    """A refused delivery, kept for forensics: metadata always, the body only when the
    sender was authenticated (an anonymous body is nobody's data to keep)."""

    __tablename__ = "quarantined_delivery"

    id: int | None = Field(default=None, primary_key=True, sa_type=IdType)
    received_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime, index=True)
    route: str = Field(max_length=200)
    remote_addr: str | None = Field(default=None, max_length=64)
    status_code: int
    reason: str = Field(max_length=64)
    detail: str = Field(sa_type=Text)
    headers: str = Field(sa_type=Text)
    body_size: int | None = None
    body: bytes | None = Field(default=None, sa_type=LargeBinary)


class ScheduledJob(SQLModel, table=True):
    """Periodic work shared by every worker process: a lease so that one process runs a
    job per interval, and the end of the last window polled so the next one overlaps it."""

    __tablename__ = "scheduled_job"

    name: str = Field(primary_key=True, max_length=64)
    owner: str | None = Field(default=None, max_length=64)
    leased_until: datetime | None = Field(default=None, sa_type=UtcDateTime)
    last_window_end: datetime | None = Field(default=None, sa_type=UtcDateTime)
    last_success_at: datetime | None = Field(default=None, sa_type=UtcDateTime)
    last_error: str | None = Field(default=None, sa_type=Text)


class ReconciliationRun(SQLModel, table=True):
    """One reconciliation of one business day (America/Sao_Paulo). Re-running the same day
    makes a new run; the latest completed run is the day's answer."""

    __tablename__ = "reconciliation_run"

    id: int | None = Field(default=None, primary_key=True, sa_type=IdType)
    business_date: date = Field(index=True)
    started_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime)
    finished_at: datetime | None = Field(default=None, sa_type=UtcDateTime)
    status: str = Field(default="running", max_length=16, description="running|completed|failed")
    exit_code: int | None = None
    verdict: str | None = Field(default=None, max_length=32, description="a DayVerdict")
    report: str | None = Field(default=None, sa_type=Text, description="the JSON report")


class ReconciliationItemBase(SQLModel):
    subject: str = Field(
        max_length=16, description="movement, charge, payout, infraction, statement or recurrence"
    )
    ref: str = Field(max_length=120, description="endToEndId, rtrId, txid, key or case id")
    status: str = Field(max_length=32, description="docs/design.md §5 vocabulary")
    exception: bool = Field(default=False, description="a person must look at it")
    reason: str = Field(sa_type=Text)
    expected_cents: int | None = Field(default=None, sa_type=BigInteger)
    actual_cents: int | None = Field(default=None, sa_type=BigInteger)
    source: str | None = Field(default=None, max_length=16, description="webhook, poll, both")
    inbox_item_id: int | None = Field(default=None, sa_type=BigInteger)
    statement_entry_id: int | None = Field(default=None, sa_type=BigInteger)
    due_at: datetime | None = Field(
        default=None, sa_type=UtcDateTime, description="pending: when it becomes a break"
    )
    refund_by: date | None = Field(
        default=None, description="money that may have to go back: the last day to refund"
    )
    carried: str | None = Field(
        default=None, max_length=8, description="in: from an earlier day; out: to a later one"
    )
    net_cents: int | None = Field(
        default=None, sa_type=BigInteger, description="a Pix: value less settled refunds"
    )
    priority: int | None = Field(default=None, description="1 most urgent")
    duplicate_webhooks: int | None = Field(
        default=None,
        description="a Pix or refund: webhooks that repeated the first (counted, no effect)",
    )


class ReconciliationItem(ReconciliationItemBase, table=True):
    """The verdict on one movement, charge, payout or case in one run, with what decided it."""

    __tablename__ = "reconciliation_item"
    __table_args__ = (
        UniqueConstraint("run_id", "subject", "ref", name="uq_reconciliation_item"),
        # Only the exceptions: an entry per agreeing verdict, nearly all with the same key,
        # cost more to keep than the other indexes together (migration 0020). A query
        # reaches it with ``where(items.c.exception)``, which each dialect writes as here.
        Index(
            "ix_reconciliation_item_exceptions",
            "run_id",
            postgresql_where=text("exception"),
            sqlite_where=text("exception = 1"),
        ),
        # The few pending and carried verdicts the report reads after the matchers, each
        # of which read the whole run without them.
        Index(
            "ix_reconciliation_item_pending",
            "run_id",
            postgresql_where=text("status = 'pending'"),
            sqlite_where=text("status = 'pending'"),
        ),
        Index(
            "ix_reconciliation_item_carried",
            "run_id",
            postgresql_where=text("carried IS NOT NULL"),
            sqlite_where=text("carried IS NOT NULL"),
        ),
    )

    id: int | None = Field(default=None, primary_key=True, sa_type=IdType)
    # No foreign key on purpose: only the engine writes these, right after creating the
    # run, and checking a million rows one by one doubled the time of a nightly run.
    run_id: int = Field(sa_type=BigInteger)


class ExceptionCase(SQLModel, table=True):
    """An exception as people work on it. Keyed by what it is, not by run, so that a
    resolution survives re-running the day."""

    __tablename__ = "exception_case"
    __table_args__ = (
        UniqueConstraint("business_date", "subject", "ref", "status", name="uq_exception_case"),
        # The same problem on earlier days (a case's lifecycle, ``reconcile/cases.py``).
        Index("ix_exception_case_subject_ref", "subject", "ref", "business_date"),
    )

    id: int | None = Field(default=None, primary_key=True, sa_type=IdType)
    business_date: date = Field(index=True)
    subject: str = Field(max_length=16)
    ref: str = Field(max_length=120)
    status: str = Field(max_length=32)
    state: str = Field(default=CaseState.OPEN.value, max_length=16, description="a CaseState")
    note: str | None = Field(default=None, sa_type=Text)
    first_seen_run_id: int = Field(sa_type=BigInteger)
    last_seen_run_id: int = Field(sa_type=BigInteger)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime)
    # What the latest run that raised it said: kept here, since a run that clears it no
    # longer has its verdict, and a person opening a cleared case still asks how much, why.
    reason: str | None = Field(default=None, sa_type=Text)
    expected_cents: int | None = Field(default=None, sa_type=BigInteger)
    actual_cents: int | None = Field(default=None, sa_type=BigInteger)


class CaseEvent(SQLModel, table=True):
    """What a person did to an exception case — acknowledged, resolved, reopened — by
    whom, when and with which note. Append-only: the database refuses to update or delete
    a row (triggers of migration 0014), so the history cannot be rewritten afterwards."""

    __tablename__ = "case_event"

    id: int | None = Field(default=None, primary_key=True, sa_type=IdType)
    case_id: int = Field(foreign_key="exception_case.id", sa_type=BigInteger, index=True)
    action: str = Field(max_length=16, description="acknowledge, resolve or reopen")
    actor: str = Field(
        max_length=100, description="dashboard:<user>, or cli:<operating-system user>"
    )
    note: str | None = Field(default=None, sa_type=Text)
    previous_state: str = Field(max_length=16, description="the CaseState before the action")
    at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime)


class OperatorAction(SQLModel, table=True):
    """A bulk operation someone ran on the inbox or the stored data — a replay, a prune —
    with who, when, what it selected and how many rows it touched. Kept forever: it is the
    answer to "why was this item processed twice?" or "where did that raw body go?". A
    dashboard sign-out is recorded here too (``sign_out``, the session's id as its
    selection): every process refuses that session's cookie from then on."""

    __tablename__ = "operator_action"

    id: int | None = Field(default=None, primary_key=True, sa_type=IdType)
    action: str = Field(max_length=16, index=True, description="replay, prune or sign_out")
    actor: str = Field(
        max_length=100, description="cli:<operating-system user>, or job:<name> for a job"
    )
    at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime)
    selection: str = Field(sa_type=Text, description="what was asked for, JSON")
    dry_run: bool = False
    count: int = Field(default=0, description="rows selected (replay) or touched (prune)")
    detail: str | None = Field(default=None, sa_type=Text, description="counts by kind, JSON")
