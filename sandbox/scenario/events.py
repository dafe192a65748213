"""What happens during the day, one model per event ``type``.

Every event has ``at`` (a time of day in America/Sao_Paulo) and an optional ``note``.
Events that make the provider notify the merchant take an optional ``delivery`` fault,
which applies to every notification the event causes.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import Field, model_validator

from sandbox.scenario.fields import (
    ApiFamily,
    Cnpj,
    Cpf,
    Delivery,
    Money,
    Name,
    Note,
    Ref,
    SpiCode,
    Strict,
    TimeOfDay,
    Txid,
)

MAX_BOOKING_LAG: Final = 3600
BookingLag = Annotated[int, Field(ge=0, le=MAX_BOOKING_LAG)]
DebitLine = Literal["full", "end_to_end_id", "bare"]
RefundNature = Literal[
    "ORIGINAL", "RETIRADA", "MED_OPERACIONAL", "MED_FRAUDE", "MED_PIX_AUTOMATICO"
]


class _Event(Strict):
    at: TimeOfDay
    note: Note | None = None


class _Notified(_Event):
    delivery: Delivery | None = None


class _Payer(_Notified):
    # Seconds between the Pix (its horario) and its statement line: a Pix just before
    # midnight may be booked on the next day's statement.
    booked_after: BookingLag = 0
    payer_cpf: Cpf | None = None
    payer_cnpj: Cnpj | None = None
    payer_name: Name | None = None

    @model_validator(mode="after")
    def _one_document(self) -> _Payer:
        if self.payer_cpf is not None and self.payer_cnpj is not None:
            raise ValueError("give payer_cpf or payer_cnpj, not both")
        return self


class PixReceived(_Payer):
    """A Pix to the merchant's key. Without ``txid`` the BCB rules send no notification."""

    type: Literal["pix"]
    ref: Ref
    amount: Money
    txid: Txid | None = None
    info_pagador: Name | None = None


class ChargePayment(_Payer):
    """A payer pays a charge; ``amount`` defaults to what is due: the charge's amount, or
    for a ``cobv`` its amount with its fine, interest, abatement and discount on the day
    (set it to under- or over-pay; pay the same charge in two events to pay it twice)."""

    type: Literal["charge_payment"]
    ref: Ref
    charge: Ref
    amount: Money | None = None


class Refund(_Notified):
    """The merchant returns part or all of a Pix it received (a ``devolucao``)."""

    type: Literal["refund"]
    ref: Ref
    pix: Ref
    amount: Money
    natureza: RefundNature = "ORIGINAL"
    status: Literal["EM_PROCESSAMENTO", "DEVOLVIDO", "NAO_REALIZADO"] = "EM_PROCESSAMENTO"
    motivo: Name | None = None


class RefundSettled(_Notified):
    """The SPI settles (DEVOLVIDO) or refuses (NAO_REALIZADO) a refund in processing."""

    type: Literal["refund_settled"]
    refund: Ref
    status: Literal["DEVOLVIDO", "NAO_REALIZADO"] = "DEVOLVIDO"
    motivo: Name | None = None


class Payout(_Event):
    """The merchant's system creates a cash-out (PROCESSING); ``ref`` is its idempotency
    key. Creating it notifies nothing: the merchant made the API call itself."""

    type: Literal["payout"]
    ref: Ref
    amount: Money
    pix_key: Annotated[str, Field(min_length=1, max_length=77)] = "fornecedor@example.com"
    description: Name | None = None


class PayoutSettled(_Notified):
    type: Literal["payout_settled"]
    payout: Ref


class PayoutRejected(_Notified):
    type: Literal["payout_rejected"]
    payout: Ref
    error_code: SpiCode = "AC03"


class PayoutCanceled(_Notified):
    type: Literal["payout_canceled"]
    payout: Ref


class PayoutRefunded(_Notified):
    """The receiving side returns ``amount`` of a settled payout (a credit)."""

    type: Literal["payout_refunded"]
    payout: Ref
    amount: Money


class InfractionOpened(_Notified):
    """A MED case against a Pix the merchant received; ``amount`` defaults to the Pix's.
    ``blocked``: what the provider blocks as a precaution (no statement line)."""

    type: Literal["infraction_opened"]
    ref: Ref
    pix: Ref
    amount: Money | None = None
    blocked: Money | None = None
    reason: Annotated[str, Field(min_length=1, max_length=40)] = "FRAUD"

    @model_validator(mode="after")
    def _blocked_within_the_case(self) -> InfractionOpened:
        if self.blocked is not None and self.amount is not None and self.blocked > self.amount:
            raise ValueError(f"blocked exceeds the disputed amount, {self.amount}")
        return self


class InfractionClosed(_Notified):
    """Closing with ``debit`` (AGREED) takes the disputed amount from the account;
    ``debit_line`` says how much of the case the statement's debit line names."""

    type: Literal["infraction_closed"]
    infraction: Ref
    debit: bool
    debit_line: DebitLine | None = None  # None: "full"

    @model_validator(mode="after")
    def _line_only_with_a_debit(self) -> InfractionClosed:
        if self.debit_line is not None and not self.debit:
            raise ValueError("debit_line describes a debit: it needs debit true")
        return self


class RecurringChargeAttempt(_Notified):
    """A Pix Automático debit attempt. Success books a Pix (named ``ref``, so it can be
    refunded or disputed) and notifies both ``/cobr`` and ``/pix``."""

    type: Literal["recurring_charge_attempt"]
    charge: Ref
    succeed: bool
    ref: Ref | None = None
    rejection_code: SpiCode = "AM02"
    booked_after: BookingLag = 0

    @model_validator(mode="after")
    def _ref_only_on_success(self) -> RecurringChargeAttempt:
        if self.ref is not None and not self.succeed:
            raise ValueError("a failed attempt books no Pix: drop its ref")
        if self.booked_after and not self.succeed:
            raise ValueError("a failed attempt books no Pix: drop its booked_after")
        return self


class ForgedPix(_Notified):
    """A /pix notification for a Pix the provider never booked (unknown endToEndId).
    ``charge`` gives it that charge's txid, as a forger paying an order would."""

    type: Literal["forged_pix"]
    ref: Ref
    amount: Money
    txid: Txid | None = None
    charge: Ref | None = None

    @model_validator(mode="after")
    def _txid_or_charge(self) -> ForgedPix:
        if self.txid is not None and self.charge is not None:
            raise ValueError("give txid or charge, not both")
        return self


class ForgedTransfer(_Notified):
    """A TRANSFER notification for an idempotency key (``ref``) the API never saw; with
    ``keys`` ``none`` it carries only an ``id`` (neither idempotencyKey nor endToEndId)."""

    type: Literal["forged_transfer"]
    ref: Ref
    amount: Money
    status: Literal["LIQUIDATED", "PROCESSING"] = "LIQUIDATED"
    keys: Literal["both", "none"] = "both"


class ApiErrors(_Event):
    """The next ``count`` requests to that API answer ``status`` (429 burst, 503s...)."""

    type: Literal["api_errors"]
    api: ApiFamily
    endpoint: Literal["api", "token"] = "api"
    status: int = Field(default=503, ge=400, le=599)
    count: int = Field(default=1, ge=1, le=1000)
    retry_after: int | None = Field(default=None, ge=0, le=3600)


class ApiSlow(_Event):
    """The next ``count`` requests to that API answer correctly after ``seconds``."""

    type: Literal["api_slow"]
    api: ApiFamily
    endpoint: Literal["api", "token"] = "api"
    count: int = Field(default=1, ge=1, le=1000)
    seconds: float = Field(gt=0, le=60)


class TokensExpired(_Event):
    """Every access token issued so far stops working (clients must fetch a new one)."""

    type: Literal["tokens_expired"]
    api: Literal["qrcode", "accounts", "both"] = "both"


Event = Annotated[
    PixReceived
    | ChargePayment
    | Refund
    | RefundSettled
    | Payout
    | PayoutSettled
    | PayoutRejected
    | PayoutCanceled
    | PayoutRefunded
    | InfractionOpened
    | InfractionClosed
    | RecurringChargeAttempt
    | ForgedPix
    | ForgedTransfer
    | ApiErrors
    | ApiSlow
    | TokensExpired,
    Field(discriminator="type"),
]
ApiFault = ApiErrors | ApiSlow | TokensExpired
