"""What the provider's API answers is read as the receiver reads a notification: a lone
UTF-16 surrogate (``"\\ud800"``), which no database column can hold, becomes U+FFFD, so a
polled item stores as a notified one does; a pair stays its character."""

from __future__ import annotations

from decimal import Decimal

import httpx

from reconcile.provider.responses import decode_json


def test_lone_surrogates_are_mended_and_amounts_stay_exact() -> None:
    body = (
        rb'{"pix": [{"infoPagador": "pedido \ud83d",'
        rb' "nome": "Jo\u00e3o \ud83d\ude00", "valor": 110.10}]}'
    )
    (pix,) = decode_json(httpx.Response(200, content=body))["pix"]
    assert pix["infoPagador"] == "pedido \ufffd"
    assert pix["nome"] == "João 😀"
    assert pix["valor"] == Decimal("110.10")
    # Mended text encodes, as a text column will need it to.
    assert pix["infoPagador"].encode("utf-8")
