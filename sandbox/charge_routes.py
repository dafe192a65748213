"""``PUT|GET /cob/{txid}``, ``GET /cob`` and the same for ``/cobv``: the merchant's charges."""

from __future__ import annotations

import json
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sandbox.charge_payloads import CHARGE_TXID_RE, parse_cob, parse_cobv
from sandbox.charges import BUSINESS_TZ, ChargeKind
from sandbox.guards import api_endpoint, provider_of
from sandbox.listing import DOCUMENT_FILTERS, invalid_list, list_response, parse_list_request
from sandbox.problems import problem, violation

# The BCB error types per charge kind: (invalid operation, not found, invalid query).
_ERRORS: Final = {
    "cob": ("CobOperacaoInvalida", "CobNaoEncontrado", "CobConsultaInvalida"),
    "cobv": ("CobVOperacaoInvalida", "CobVNaoEncontrada", "CobVConsultaInvalida"),
}
_NAMES: Final = {"cob": "cobrança imediata", "cobv": "cobrança com vencimento"}


def _invalid(kind: ChargeKind, violacoes: list[dict[str, str]]) -> Response:
    return problem(
        400,
        _ERRORS[kind][0],
        f"{_NAMES[kind].capitalize()} inválida.",
        "A requisição que busca criar a cobrança não respeita o schema "
        "ou está semanticamente errada.",
        violacoes=violacoes,
    )


async def _json_body(request: Request) -> Any:
    try:
        return json.loads(await request.body())
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


async def _put(request: Request, kind: ChargeKind) -> Response:
    provider = provider_of(request)
    txid = str(request.path_params["txid"])
    if not CHARGE_TXID_RE.fullmatch(txid):
        reason = "Deve ter de 26 a 35 caracteres alfanuméricos."
        return _invalid(kind, [violation("txid", reason, txid)])
    body = await _json_body(request)
    keys = {provider.pix_key}
    if kind == "cob":
        terms = parse_cob(body, keys)
    else:
        terms = parse_cobv(body, keys, provider.clock().astimezone(BUSINESS_TZ).date())
    if isinstance(terms, list):
        return _invalid(kind, terms)
    try:
        created = provider.charges.create(kind, txid, terms)
    except ValueError:
        return _invalid(kind, [violation("txid", "Já existe uma cobrança com este txid.", txid)])
    return JSONResponse(created, status_code=201)


async def _get(request: Request, kind: ChargeKind) -> Response:
    txid = str(request.path_params["txid"])
    charge = provider_of(request).charges.get(kind, txid)
    if charge is None:
        detail = f"{_NAMES[kind].capitalize()} não encontrada para o txid {txid}."
        return problem(404, _ERRORS[kind][1], "Cobrança não encontrada", detail)
    return JSONResponse(charge)


async def _list(request: Request, kind: ChargeKind) -> Response:
    parsed = parse_list_request(request.query_params, DOCUMENT_FILTERS)
    if isinstance(parsed, list):
        return invalid_list(_ERRORS[kind][2], "cobranças", parsed)
    matching = provider_of(request).charges.query(kind, parsed)
    return list_response("cobs", parsed, matching, dict)


@api_endpoint("PUT /cob/{txid}", "cob.write")
async def put_cob(request: Request) -> Response:
    return await _put(request, "cob")


@api_endpoint("GET /cob/{txid}", "cob.read")
async def get_cob(request: Request) -> Response:
    return await _get(request, "cob")


@api_endpoint("GET /cob", "cob.read")
async def list_cobs(request: Request) -> Response:
    return await _list(request, "cob")


@api_endpoint("PUT /cobv/{txid}", "cobv.write")
async def put_cobv(request: Request) -> Response:
    return await _put(request, "cobv")


@api_endpoint("GET /cobv/{txid}", "cobv.read")
async def get_cobv(request: Request) -> Response:
    return await _get(request, "cobv")


@api_endpoint("GET /cobv", "cobv.read")
async def list_cobvs(request: Request) -> Response:
    return await _list(request, "cobv")
