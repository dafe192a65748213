"""The simulated provider: clients and tokens, received Pix, webhooks, scripted faults.

One ``SandboxProvider`` backs one app; tests and the demo drive it directly (receive a
Pix, expire tokens, fail the next requests) while clients talk to it over HTTP.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal
from typing import Any

from sandbox.accounts.state import AccountsState
from sandbox.accounts.statement import FeeBooking
from sandbox.automatico import AutomaticoBook
from sandbox.charges import ChargeBook
from sandbox.clock import Clock, utcnow
from sandbox.defaults import (
    DEFAULT_CLIENT_ID,
    DEFAULT_CLIENT_SECRET,
    DEFAULT_ISPB,
    DEFAULT_LOCATION_HOST,
    DEFAULT_MERCHANT,
    DEFAULT_MERCHANT_ACCOUNT,
    DEFAULT_PAYER_NAME,
    DEFAULT_PIX_KEY,
    DEFAULT_SCOPES,
    DEFAULT_TOKEN_LIFETIME_SECONDS,
)
from sandbox.faults import ScriptedEndpoints
from sandbox.ledger import PixLedger, PixPage, PixQuery
from sandbox.qrcode_operations import QrCodeOperations
from sandbox.tokens import OAuthClient, TokenStore
from sandbox.webhook_registry import WebhookRegistry
from sandbox.webhook_slot import WebhookSlot


class SandboxProvider(QrCodeOperations, ScriptedEndpoints):
    def __init__(
        self,
        *,
        ispb: str = DEFAULT_ISPB,
        pix_key: str = DEFAULT_PIX_KEY,
        token_lifetime_seconds: float = DEFAULT_TOKEN_LIFETIME_SECONDS,
        seed: int | None = None,
        clock: Clock = utcnow,
        register_default_client: bool = True,
        pix_received_fee: Decimal | None = None,
        pix_fee_booking: FeeBooking = "line",
    ) -> None:
        ScriptedEndpoints.__init__(self)
        self.ispb = ispb
        self.pix_key = pix_key
        self.clock = clock
        self.rng = random.Random(seed)
        self.tokens = TokenStore(lifetime_seconds=token_lifetime_seconds, clock=clock)
        self.ledger = PixLedger(ispb=ispb, pix_key=pix_key, rng=self.rng, clock=clock)
        self.webhooks = WebhookRegistry(clock=clock)
        # Charges and Pix Automático book their Pix in the same ledger (qrcode_operations.py).
        self.charges = ChargeBook(
            ledger=self.ledger,
            rng=self.rng,
            clock=clock,
            location_host=DEFAULT_LOCATION_HOST,
            merchant=DEFAULT_MERCHANT,
        )
        self.automatico = AutomaticoBook(
            ledger=self.ledger,
            rng=self.rng,
            clock=clock,
            ispb=ispb,
            merchant=DEFAULT_MERCHANT,
            account=DEFAULT_MERCHANT_ACCOUNT,
        )
        self.rec_webhook = WebhookSlot(clock=clock)
        self.cobr_webhook = WebhookSlot(clock=clock)
        # The accounts (cash-out) API family: its own OAuth and books, over the same ledger.
        self.accounts = AccountsState(ledger=self.ledger, ispb=ispb, clock=clock, seed=seed)
        # The provider's fee (tarifa) per Pix received: none unless asked for.
        self.accounts.set_pix_received_fee(pix_received_fee, pix_fee_booking)
        if register_default_client:
            self.register_client(DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, DEFAULT_SCOPES)

    # -- OAuth -------------------------------------------------------------------------

    def register_client(self, client_id: str, secret: str, scopes: Iterable[str]) -> OAuthClient:
        return self.tokens.register_client(client_id, secret, frozenset(scopes))

    @property
    def token_lifetime_seconds(self) -> float:
        return self.tokens.lifetime_seconds

    @token_lifetime_seconds.setter
    def token_lifetime_seconds(self, value: float) -> None:
        self.tokens.lifetime_seconds = value

    @property
    def tokens_issued(self) -> int:
        return self.tokens.issued_count

    def expire_tokens(self) -> None:
        self.tokens.expire_all()

    # -- Pix ---------------------------------------------------------------------------

    def receive_pix(
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
    ) -> dict[str, Any]:
        """Book an incoming Pix and return it as ``GET /pix/{e2eid}`` will."""
        return self.ledger.receive(
            amount,
            txid=txid,
            payer_cpf=payer_cpf,
            payer_cnpj=payer_cnpj,
            payer_name=payer_name,
            info_pagador=info_pagador,
            horario=horario,
            chave=chave,
        )

    def refund_pix(
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
        return self.ledger.refund(
            e2eid,
            amount,
            refund_id=refund_id,
            natureza=natureza,
            status=status,
            motivo=motivo,
            at=at,
        )

    def settle_refund(
        self, e2eid: str, refund_id: str, *, status: str = "DEVOLVIDO", motivo: str | None = None
    ) -> dict[str, Any]:
        return self.ledger.settle_refund(e2eid, refund_id, status=status, motivo=motivo)

    def get_pix(self, e2eid: str) -> dict[str, Any] | None:
        return self.ledger.get(e2eid)

    def all_pix(self) -> list[dict[str, Any]]:
        return self.ledger.all()

    def query_pix(self, query: PixQuery, *, page: int, per_page: int) -> PixPage:
        return self.ledger.query(query, page=page, per_page=per_page)
