"""``GET /pix`` and ``GET /pix/{e2eid}``: the received-Pix queries of the QR code API."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sandbox.guards import api_endpoint, provider_of
from sandbox.ledger import PixQuery
from sandbox.listing import DOCUMENT_FILTERS, QueryReader, parametros
from sandbox.problems import problem

_TXID_RE: Final = re.compile(r"[A-Za-z0-9]{1,35}")


@dataclass(frozen=True, slots=True)
class _ListRequest:
    query: PixQuery
    page: int
    per_page: int
    echo: dict[str, Any]  # the filters as the client sent them, for ``parametros``


def _parse_list_request(params: QueryParams) -> _ListRequest | list[dict[str, str]]:
    """The validated request, or the BCB ``violacoes`` explaining why it is not one."""
    reader = QueryReader(params)
    inicio, fim = reader.timestamp("inicio"), reader.timestamp("fim")
    txid = reader.pattern("txid", _TXID_RE, "Deve ter de 1 a 35 caracteres alfanuméricos.")
    txid_present = reader.flag("txIdPresente")
    refund_present = reader.flag("devolucaoPresente")
    cpf = reader.pattern("cpf", *DOCUMENT_FILTERS["cpf"])
    cnpj = reader.pattern("cnpj", *DOCUMENT_FILTERS["cnpj"])
    page, per_page = reader.paging()
    window = reader.window(inicio, fim)
    if window is None:
        return reader.problems
    query = PixQuery(*window, txid, txid_present, refund_present, cpf, cnpj)
    return _ListRequest(query, page, per_page, reader.echo)


@api_endpoint("GET /pix", "pix.read")
async def list_pix(request: Request) -> Response:
    parsed = _parse_list_request(request.query_params)
    if isinstance(parsed, list):
        return problem(
            400,
            "PixConsultaInvalida",
            "Consulta de Pix inválida",
            "Os parâmetros de consulta à lista de Pix recebidos não respeitam o schema "
            "ou não fazem sentido semanticamente.",
            violacoes=parsed,
        )
    page = provider_of(request).query_pix(parsed.query, page=parsed.page, per_page=parsed.per_page)
    answer = parametros(parsed.echo, parsed.page, parsed.per_page, page.total)
    return JSONResponse({"parametros": answer, "pix": page.items})


@api_endpoint("GET /pix/{e2eid}", "pix.read")
async def get_pix(request: Request) -> Response:
    e2eid = str(request.path_params["e2eid"])
    pix = provider_of(request).get_pix(e2eid)
    if pix is None:
        return problem(
            404,
            "PixNaoEncontrado",
            "Pix não encontrado",
            f"Pix não encontrado para o e2eid {e2eid}.",
        )
    return JSONResponse(pix)
