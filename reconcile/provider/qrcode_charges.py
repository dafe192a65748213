"""Charges, Pix Automático and webhook registration of the QR code (BCB Pix) API.

Mixed into ``QrCodeApi``, so one client (one token, one connection pool) serves the whole
API family; this module only builds paths and parameters.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any, Final
from urllib.parse import quote, urlsplit

from reconcile.provider.paging import walk_pages, window
from reconcile.provider.transport import ApiTransport

# Looser than the spec (26-35 for charges, 29 for idRec) on purpose: they only guard the
# URL path, and a provider's identifiers are its own business.
_TXID_RE: Final = re.compile(r"[A-Za-z0-9]{1,35}")
_ID_REC_RE: Final = re.compile(r"[A-Za-z0-9]{1,64}")


def _path_id(value: str, pattern: re.Pattern[str], what: str) -> str:
    if not pattern.fullmatch(value):
        raise ValueError(f"not a {what}: {value!r}")
    return quote(value, safe="")


def _webhook_body(url: str) -> dict[str, str]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"webhook URL must be absolute http(s), got {url!r}")
    return {"webhookUrl": url}


class QrCodeChargeQueries:
    """``GET /cob``, ``/cobv``, ``/rec``, ``/cobr`` (one or a list) and ``PUT /webhook…``.

    Lists yield every item with ``inicio <= created <= fim`` (tz-aware datetimes, inclusive
    like ``GET /pix``), walking ``paginacao`` to the last page lazily. Unknown ids raise
    ``NotFound``; other failures the typed errors of ``reconcile.provider.errors``.
    """

    _api: ApiTransport

    def _list(
        self,
        path: str,
        wrapper: str,
        inicio: datetime,
        fim: datetime,
        page_size: int,
        status: str | None,
        cpf: str | None,
        cnpj: str | None,
        **more: str | None,
    ) -> Iterator[dict[str, Any]]:
        """``GET {path}`` over [inicio, fim], every page, with the BCB's common filters."""
        filters = {**more, "status": status, "cpf": cpf, "cnpj": cnpj}
        return walk_pages(self._api, path, wrapper, window(inicio, fim, page_size, filters))

    # -- Immediate and due-date charges ------------------------------------------------

    def get_cob(self, txid: str) -> dict[str, Any]:
        return self._api.get_json(
            "/cob/" + _path_id(txid, _TXID_RE, "txid"), endpoint="/cob/{txid}"
        )

    def list_cobs(
        self,
        inicio: datetime,
        fim: datetime,
        page_size: int = 100,
        *,
        status: str | None = None,
        cpf: str | None = None,
        cnpj: str | None = None,
    ) -> Iterator[dict[str, Any]]:
        return self._list("/cob", "cobs", inicio, fim, page_size, status, cpf, cnpj)

    def get_cobv(self, txid: str) -> dict[str, Any]:
        return self._api.get_json(
            "/cobv/" + _path_id(txid, _TXID_RE, "txid"), endpoint="/cobv/{txid}"
        )

    def list_cobvs(
        self,
        inicio: datetime,
        fim: datetime,
        page_size: int = 100,
        *,
        status: str | None = None,
        cpf: str | None = None,
        cnpj: str | None = None,
    ) -> Iterator[dict[str, Any]]:
        return self._list("/cobv", "cobs", inicio, fim, page_size, status, cpf, cnpj)

    # -- Pix Automático ----------------------------------------------------------------

    def get_rec(self, id_rec: str) -> dict[str, Any]:
        return self._api.get_json(
            "/rec/" + _path_id(id_rec, _ID_REC_RE, "idRec"), endpoint="/rec/{idRec}"
        )

    def list_recs(
        self,
        inicio: datetime,
        fim: datetime,
        page_size: int = 100,
        *,
        status: str | None = None,
        cpf: str | None = None,
        cnpj: str | None = None,
    ) -> Iterator[dict[str, Any]]:
        return self._list("/rec", "recs", inicio, fim, page_size, status, cpf, cnpj)

    def get_cobr(self, txid: str) -> dict[str, Any]:
        return self._api.get_json(
            "/cobr/" + _path_id(txid, _TXID_RE, "txid"), endpoint="/cobr/{txid}"
        )

    def list_cobrs(
        self,
        inicio: datetime,
        fim: datetime,
        page_size: int = 100,
        *,
        id_rec: str | None = None,
        status: str | None = None,
        cpf: str | None = None,
        cnpj: str | None = None,
    ) -> Iterator[dict[str, Any]]:
        return self._list("/cobr", "cobsr", inicio, fim, page_size, status, cpf, cnpj, idRec=id_rec)

    # -- Webhook registration ------------------------------------------------------------

    def register_webhook(self, chave: str, url: str) -> None:
        """``PUT /webhook/{chave}``: Pix to ``chave`` get notified at ``{url}/pix``."""
        if not 0 < len(chave) <= 77:
            raise ValueError("a Pix key has 1 to 77 characters")
        self._api.request_json(
            "PUT",
            "/webhook/" + quote(chave, safe=""),
            body=_webhook_body(url),
            endpoint="/webhook/{chave}",
        )

    def register_webhook_rec(self, url: str) -> None:
        """``PUT /webhookrec``: recurrences get notified at ``{url}/rec``."""
        self._api.request_json("PUT", "/webhookrec", body=_webhook_body(url))

    def register_webhook_cobr(self, url: str) -> None:
        """``PUT /webhookcobr``: recurring charges get notified at ``{url}/cobr``."""
        self._api.request_json("PUT", "/webhookcobr", body=_webhook_body(url))
