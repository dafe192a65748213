"""Notifications the provider never sent: what an attacker (or a confused proxy) posts.

They look like the real thing, but the API denies them: ``GET /pix/{e2eid}`` and
``GET /pix/payments/idempotencyKey/{key}`` answer 404. Ids come from a generator of their
own, so forging does not shift the ids of the real movements of the same seed.
"""

from __future__ import annotations

import random
from datetime import datetime
from decimal import Decimal
from typing import Any, Final

from sandbox.clock import format_rfc3339
from sandbox.ids import new_cpf, new_end_to_end_id, new_txid
from sandbox.ledger import format_amount
from sandbox.state import SandboxProvider

# A participant that exists in no sandbox book: the forger's "payer PSP".
_FORGER_ISPB: Final = "99999666"
# Far above the provider's sequential payout ids, so a forged id never names a real one.
_FORGED_ID_BASE: Final = 900_000_000


def forged_pix(
    provider: SandboxProvider, rng: random.Random, amount: Decimal, txid: str | None, at: datetime
) -> dict[str, Any]:
    valor = format_amount(amount)
    e2eid = new_end_to_end_id(_FORGER_ISPB, at, rng)
    while provider.get_pix(e2eid) is not None:
        e2eid = new_end_to_end_id(_FORGER_ISPB, at, rng)
    return {
        "endToEndId": e2eid,
        # The BCB notifies only Pix with a txid, so a forgery worth its salt has one.
        "txid": txid if txid is not None else new_txid(rng),
        "valor": valor,
        "componentesValor": {"original": {"valor": valor}},
        "chave": provider.pix_key,
        "horario": format_rfc3339(at),
        "pagador": {"cpf": new_cpf(rng), "nome": "Beltrano Forjado"},
    }


def forged_transfer(
    provider: SandboxProvider,
    rng: random.Random,
    key: str,
    amount: Decimal,
    status: str,
    at: datetime,
    *,
    keyless: bool = False,
) -> dict[str, Any]:
    """``keyless``: the transfer names itself only by its ``id``, with neither
    idempotencyKey nor endToEndId (both null), as some real notifications have come."""
    format_amount(amount)
    payments = provider.accounts.payments
    if not keyless and payments.get_by_key(key) is not None:
        raise ValueError(f"idempotency key {key!r} belongs to a real payout")
    # Drawn even when left out, so a keyless forgery shifts no other forged id.
    e2eid = new_end_to_end_id(_FORGER_ISPB, at, rng)
    while payments.get_by_e2e(e2eid) is not None:
        e2eid = new_end_to_end_id(_FORGER_ISPB, at, rng)
    return {
        "type": "TRANSFER",
        "data": {
            "id": _FORGED_ID_BASE + rng.randrange(100_000_000),
            "idempotencyKey": None if keyless else key,
            "endToEndId": None if keyless else e2eid,
            "pixKey": "forjado@example.com",
            "txId": None,
            "status": status,
            "errorCode": None,
            "creditDebitType": "DEBIT",
            "localInstrument": "DICT",
            "createdAt": format_rfc3339(at),
            "creditorAccount": {
                "ispb": _FORGER_ISPB,
                "issuer": "0001",
                "number": str(rng.randrange(10_000_000)),
                "accountType": "CACC",
                "document": None,
                "name": "Recebedor Forjado",
            },
            "debtorAccount": payments.debtor_account(),
            "payment": {"currency": "BRL", "amount": amount},
            "refunds": [],
            "webhookType": "TRANSFER",
        },
    }
