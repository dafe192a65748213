"""Builders of provider payloads for tests, shaped like docs/design.md §4 and the BCB spec."""

from __future__ import annotations

import itertools
import string
from typing import Any

_counter = itertools.count(1)


def e2e_id(n: int | None = None) -> str:
    """A well-formed endToEndId: E + ISPB + yyyyMMddHHmm + 11 alphanumerics."""
    n = next(_counter) if n is None else n
    suffix = "".join(string.ascii_lowercase[(n // 26**i) % 26] for i in range(11))
    return f"E18236120202611221200{suffix}"


def pix(
    *,
    e2e: str | None = None,
    valor: Any = "110.00",
    txid: str | None = "cobTx00000000000000000000001",
    horario: str = "2026-11-22T15:00:00.000-03:00",
    **extra: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "endToEndId": e2e or e2e_id(),
        "valor": valor,
        "horario": horario,
        "chave": "7d9f0335-8dcc-4054-9bf9-0dbd61d36906",
        "infoPagador": "pagamento do pedido 42",
        "pagador": {"cpf": "12345678909", "nome": "Fulana de Tal"},
    }
    if txid is not None:
        body["txid"] = txid
    body.update(extra)
    return body
