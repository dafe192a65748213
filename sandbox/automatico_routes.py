"""``GET /rec/{idRec}``, ``GET /rec``, ``GET /cobr/{txid}``, ``GET /cobr``: Pix Automático
as the merchant (the receiving side) reads it."""

from __future__ import annotations

import re
from typing import Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sandbox.guards import api_endpoint, provider_of
from sandbox.listing import (
    DOCUMENT_FILTERS,
    Filters,
    invalid_list,
    list_response,
    parse_list_request,
)
from sandbox.problems import problem

_REC_FILTERS: Final[Filters] = DOCUMENT_FILTERS
_COBR_FILTERS: Final[Filters] = {
    **DOCUMENT_FILTERS,
    "idRec": (re.compile(r"[a-zA-Z0-9]{29}"), "Deve ter 29 caracteres alfanuméricos."),
}


@api_endpoint("GET /rec/{idRec}", "rec.read")
async def get_rec(request: Request) -> Response:
    id_rec = str(request.path_params["idRec"])
    rec = provider_of(request).automatico.get_rec(id_rec)
    if rec is None:
        detail = f"Recorrência não encontrada para o idRec {id_rec}."
        return problem(404, "RecNaoEncontrada", "Recorrência não encontrada", detail)
    return JSONResponse(rec)


@api_endpoint("GET /rec", "rec.read")
async def list_recs(request: Request) -> Response:
    parsed = parse_list_request(request.query_params, _REC_FILTERS)
    if isinstance(parsed, list):
        return invalid_list("RecConsultaInvalida", "recorrências", parsed)
    matching = provider_of(request).automatico.query_recs(parsed)
    return list_response("recs", parsed, matching, dict)


@api_endpoint("GET /cobr/{txid}", "cobr.read")
async def get_cobr(request: Request) -> Response:
    txid = str(request.path_params["txid"])
    cobr = provider_of(request).automatico.get_cobr(txid)
    if cobr is None:
        detail = f"Cobrança recorrente não encontrada para o txid {txid}."
        return problem(404, "CobRNaoEncontrado", "Cobrança recorrente não encontrada", detail)
    return JSONResponse(cobr)


@api_endpoint("GET /cobr", "cobr.read")
async def list_cobrs(request: Request) -> Response:
    parsed = parse_list_request(request.query_params, _COBR_FILTERS)
    if isinstance(parsed, list):
        return invalid_list("CobRConsultaInvalida", "cobranças recorrentes", parsed)
    matching = provider_of(request).automatico.query_cobrs(parsed)
    return list_response("cobsr", parsed, matching, dict)
