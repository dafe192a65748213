"""``SandboxProvider`` methods for charges and Pix Automático, kept out of ``state.py``.

Tests and the demo call these to make things happen on the provider's side (a payer pays,
a payer approves a recurrence, a debit attempt fails); merchants' clients only see the
results over HTTP.
"""

from __future__ import annotations

import random
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Final

from sandbox.automatico import AutomaticoBook
from sandbox.charge_payloads import CHARGE_TXID_RE, DEFAULT_VALIDITY_DAYS, parse_cob, parse_cobv
from sandbox.charges import BUSINESS_TZ, ChargeBook, ChargeKind
from sandbox.clock import Clock
from sandbox.defaults import DEFAULT_PAYER_NAME
from sandbox.ids import new_cpf, new_txid
from sandbox.ledger import PixLedger, format_amount
from sandbox.listing import CNPJ_RE, CPF_RE

# The payer's PSP in Pix Automático: another participant than the sandbox PSP.
DEFAULT_PAYER_ISPB: Final = "99999010"


def person(cpf: str | None, cnpj: str | None, name: str) -> dict[str, str]:
    if (cpf is None) == (cnpj is None):
        raise ValueError("give a CPF or a CNPJ (exactly one)")
    if cpf is not None and not CPF_RE.fullmatch(cpf):
        raise ValueError(f"CPF must be 11 digits, got {cpf!r}")
    if cnpj is not None and not CNPJ_RE.fullmatch(cnpj):
        raise ValueError(f"CNPJ must be 14 digits or capitals, got {cnpj!r}")
    if not 0 < len(name) <= 140:
        raise ValueError("a name has 1 to 140 characters")
    found = {"cpf": cpf} if cpf is not None else {"cnpj": str(cnpj)}
    found["nome"] = name
    return found


class QrCodeOperations:
    """Mixed into ``SandboxProvider``, which sets these attributes up."""

    pix_key: str
    clock: Clock
    rng: random.Random
    ledger: PixLedger
    charges: ChargeBook
    automatico: AutomaticoBook

    # -- Charges (cob, cobv) -----------------------------------------------------------

    def create_cob(
        self,
        amount: Decimal,
        *,
        txid: str | None = None,
        expiracao: int = 86400,
        debtor_cpf: str | None = None,
        debtor_cnpj: str | None = None,
        debtor_name: str = DEFAULT_PAYER_NAME,
        solicitacao_pagador: str | None = None,
    ) -> dict[str, Any]:
        """Create an immediate charge as ``PUT /cob/{txid}`` does; returns it (``CobGerada``)."""
        body: dict[str, Any] = {
            "calendario": {"expiracao": expiracao},
            "valor": {"original": format_amount(amount)},
            "chave": self.pix_key,
        }
        if debtor_cpf is not None or debtor_cnpj is not None:
            body["devedor"] = person(debtor_cpf, debtor_cnpj, debtor_name)
        if solicitacao_pagador is not None:
            body["solicitacaoPagador"] = solicitacao_pagador
        return self.create_charge("cob", txid, body)

    def create_cobv(
        self,
        amount: Decimal,
        due_date: date,
        *,
        txid: str | None = None,
        validade_apos_vencimento: int = DEFAULT_VALIDITY_DAYS,
        debtor_cpf: str | None = None,
        debtor_cnpj: str | None = None,
        debtor_name: str = DEFAULT_PAYER_NAME,
    ) -> dict[str, Any]:
        """Create a due-date charge as ``PUT /cobv/{txid}`` does (``CobVGerada``).

        Without a debtor document a random CPF is used: a due-date charge names its debtor.
        """
        if debtor_cpf is None and debtor_cnpj is None:
            debtor_cpf = new_cpf(self.rng)
        body = {
            "calendario": {
                "dataDeVencimento": due_date.isoformat(),
                "validadeAposVencimento": validade_apos_vencimento,
            },
            "devedor": person(debtor_cpf, debtor_cnpj, debtor_name),
            "valor": {"original": format_amount(amount)},
            "chave": self.pix_key,
        }
        return self.create_charge("cobv", txid, body)

    def create_charge(self, kind: ChargeKind, txid: str | None, body: Any) -> dict[str, Any]:
        """Validate a ``PUT /cob|cobv/{txid}`` body and create the charge.

        Raises ``ValueError`` (with the BCB violations in its message) when invalid.
        """
        if txid is None:
            txid = new_txid(self.rng)
        if not CHARGE_TXID_RE.fullmatch(txid):
            raise ValueError(f"a charge's txid has 26-35 alphanumerics, got {txid!r}")
        keys = {self.pix_key}
        if kind == "cob":
            terms = parse_cob(body, keys)
        else:
            terms = parse_cobv(body, keys, self.clock().astimezone(BUSINESS_TZ).date())
        if isinstance(terms, list):
            raise ValueError(f"invalid {kind}: {terms}")
        return self.charges.create(kind, txid, terms)

    def pay_charge(
        self,
        txid: str,
        amount: Decimal | None = None,
        *,
        payer_cpf: str | None = None,
        payer_cnpj: str | None = None,
        payer_name: str | None = None,
        horario: datetime | None = None,
    ) -> dict[str, Any]:
        """A payer pays the charge: book a Pix with its txid and return that Pix.

        ``amount`` defaults to ``valor.original``; the payer defaults to the charge's
        debtor. The first payment makes the charge ``CONCLUIDA``. A second payment, or a
        different amount, is still booked: the BCB forbids it, but reconciliation has to
        cope with PSPs that let it through. Removed or expired charges raise
        ``ChargeNotPayable`` (checked at ``horario``, default now); unknown ones
        ``KeyError``.
        """
        return self.charges.pay(
            txid,
            amount,
            payer_cpf=payer_cpf,
            payer_cnpj=payer_cnpj,
            payer_name=payer_name,
            horario=horario,
        )

    def remove_charge(self, txid: str, *, by_psp: bool = False) -> dict[str, Any]:
        """``REMOVIDA_PELO_USUARIO_RECEBEDOR`` (or ``…_PELO_PSP``); only an ATIVA charge."""
        return self.charges.remove(txid, by_psp=by_psp)

    def charge_expired(self, txid: str) -> bool:
        """Whether the charge's validity ended (by the sandbox clock), paid or not."""
        return self.charges.is_expired(txid)

    # -- Pix Automático (rec, cobr) ----------------------------------------------------

    def create_recurrence(
        self,
        amount: Decimal | None = None,
        *,
        contract: str = "CONTRATO1",
        debtor_cpf: str | None = None,
        debtor_cnpj: str | None = None,
        debtor_name: str = DEFAULT_PAYER_NAME,
        start: date | None = None,
        end: date | None = None,
        periodicity: str = "MENSAL",
        retry_policy: str = "NAO_PERMITE",
        payer_ispb: str = DEFAULT_PAYER_ISPB,
        at: datetime | None = None,
    ) -> dict[str, Any]:
        """A recurrence in status CRIADA, awaiting the payer (``amount`` None: variable)."""
        if debtor_cpf is None and debtor_cnpj is None:
            debtor_cpf = new_cpf(self.rng)
        moment = at if at is not None else self.clock()
        return self.automatico.create_recurrence(
            person(debtor_cpf, debtor_cnpj, debtor_name),
            contract=contract,
            amount=amount,
            start=start if start is not None else moment.astimezone(BUSINESS_TZ).date(),
            end=end,
            periodicity=periodicity,
            retry_policy=retry_policy,
            payer_ispb=payer_ispb,
            at=at,
        )

    def update_recurrence(
        self, id_rec: str, status: str, *, at: datetime | None = None
    ) -> dict[str, Any]:
        """CRIADA → APROVADA | REJEITADA | EXPIRADA | CANCELADA, or APROVADA → CANCELADA;
        each step is appended to ``atualizacao``. Cancelling cancels its open charges."""
        return self.automatico.update_recurrence(id_rec, status, at)

    def create_recurring_charge(
        self,
        id_rec: str,
        amount: Decimal,
        due_date: date,
        *,
        txid: str | None = None,
        at: datetime | None = None,
    ) -> dict[str, Any]:
        """A recurring charge (ATIVA) under an APROVADA recurrence."""
        if txid is not None and self.charges.kind_of(txid) is not None:
            raise ValueError(f"txid {txid} is already used by a charge")
        return self.automatico.create_recurring_charge(id_rec, amount, due_date, txid=txid, at=at)

    def attempt_recurring_charge(
        self,
        txid: str,
        *,
        succeed: bool,
        rejection_code: str = "AM02",
        at: datetime | None = None,
    ) -> dict[str, Any]:
        """One debit attempt: appends to ``tentativas`` (with its ``endToEndId``).

        Success books the Pix in the ledger and concludes the charge; a failure leaves it
        ATIVA while the retry policy allows another attempt, else makes it REJEITADA.
        Returns the recurring charge as ``GET /cobr/{txid}`` shows it.
        """
        return self.automatico.attempt(txid, succeed=succeed, rejection_code=rejection_code, at=at)

    # -- Money ---------------------------------------------------------------------------

    def balance_cents(self) -> int:
        """Pix received minus refunds settled, in centavos: what the account holds."""
        return self.ledger.balance_cents()
