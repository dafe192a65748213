"""Client of the provider's QR code API, which is the BCB standard Pix API (``/pix``)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, Final
from urllib.parse import quote

import httpx

from reconcile.provider.client import ProviderClient
from reconcile.provider.paging import walk_pages, window
from reconcile.provider.qrcode_charges import QrCodeChargeQueries
from reconcile.provider.retry import RetryPolicy

# Looser than the spec's 32 characters on purpose: only guards the URL path.
_E2EID_RE: Final = re.compile(r"[A-Za-z0-9]{1,64}")


class QrCodeApi(QrCodeChargeQueries, ProviderClient):
    """The QR code API: ``GET /pix`` and ``GET /pix/{e2eid}`` here, charges, Pix Automático
    and webhook registration from ``QrCodeChargeQueries``; OAuth2, retries and typed errors.

    ``http_client`` lets a deployment supply mutual TLS (``cert=``, ``verify=``) or a
    proxy; a client passed in is not closed by ``close()``.
    """

    API = "qrcode"

    def __init__(
        self,
        base_url: str,
        client_id: str,
        client_secret: str,
        *,
        scopes: Sequence[str] | None = None,
        http_client: httpx.Client | None = None,
        timeout: float = 10.0,
        token_url: str | None = None,
        retry: RetryPolicy | None = None,
        token_refresh_margin: float = 30.0,
    ) -> None:
        super().__init__(
            base_url,
            client_id,
            client_secret,
            oauth_path="/oauth/token",
            http_client=http_client,
            timeout=timeout,
            token_url=token_url,
            retry=retry,
            token_refresh_margin=token_refresh_margin,
            scopes=scopes,
        )

    def list_received_pix(
        self,
        inicio: datetime,
        fim: datetime,
        page_size: int = 100,
        *,
        txid: str | None = None,
        txid_present: bool | None = None,
        refund_present: bool | None = None,
        cpf: str | None = None,
        cnpj: str | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Every Pix received with ``inicio <= horario <= fim`` (inclusive, per the spec).

        Pages are fetched lazily while iterating, so errors surface from the loop. A Pix
        booked during the walk can shift pages and appear twice; callers dedupe by
        ``endToEndId`` (the inbox does, by its unique key).
        """
        params = window(
            inicio,
            fim,
            page_size,
            {
                "txid": txid,
                "txIdPresente": txid_present,
                "devolucaoPresente": refund_present,
                "cpf": cpf,
                "cnpj": cnpj,
            },
        )
        yield from walk_pages(self._api, "/pix", "pix", params)

    def get_pix(self, e2eid: str) -> dict[str, Any]:
        """The Pix as the provider knows it; ``NotFound`` when it does not."""
        if not _E2EID_RE.fullmatch(e2eid):
            raise ValueError(f"not an endToEndId: {e2eid!r}")
        return self._api.get_json("/pix/" + quote(e2eid, safe=""), endpoint="/pix/{e2eid}")
