"""``PUT|GET|DELETE /webhook/{chave}``, ``/webhookrec`` and ``/webhookcobr``: where the
merchant asks to be notified of Pix, recurrences and recurring charges."""

from __future__ import annotations

import json
from typing import Final
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sandbox.guards import api_endpoint, provider_of
from sandbox.problems import problem, violation
from sandbox.webhook_slot import WebhookSlot


def _not_found(chave: str) -> Response:
    return problem(404, "WebhookNaoEncontrado", "Webhook não encontrado", f"Chave {chave}.")


async def _webhook_url(request: Request, kind: str) -> str | Response:
    """The ``webhookUrl`` of the body, or the BCB ``{kind}OperacaoInvalida`` problem."""
    try:
        body = json.loads(await request.body())
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = None
    url = body.get("webhookUrl") if isinstance(body, dict) else None
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        return problem(
            400,
            f"{kind}OperacaoInvalida",
            "Webhook inválido",
            "A requisição não respeita o schema.",
            violacoes=[violation("webhookUrl", "Deve ser uma URL http(s) absoluta.", str(url))],
        )
    return str(url)


@api_endpoint("PUT /webhook/{chave}", "webhook.write")
async def put_webhook(request: Request) -> Response:
    chave = str(request.path_params["chave"])
    url = await _webhook_url(request, "Webhook")
    if isinstance(url, Response):
        return url
    if len(chave) > 77:
        return _not_found(chave)
    provider_of(request).webhooks.register(chave, url)
    return Response(status_code=200)


@api_endpoint("GET /webhook/{chave}", "webhook.read")
async def get_webhook(request: Request) -> Response:
    chave = str(request.path_params["chave"])
    entry = provider_of(request).webhooks.get(chave)
    return JSONResponse(entry) if entry is not None else _not_found(chave)


@api_endpoint("DELETE /webhook/{chave}", "webhook.write")
async def delete_webhook(request: Request) -> Response:
    chave = str(request.path_params["chave"])
    if not provider_of(request).webhooks.remove(chave):
        return _not_found(chave)
    return Response(status_code=204)


# Pix Automático: one URL per kind; the provider POSTs to ``{webhookUrl}/rec`` or ``/cobr``.
_SLOTS: Final = {"rec": "WebhookRec", "cobr": "WebhookCobR"}


def _slot(request: Request, kind: str) -> WebhookSlot:
    provider = provider_of(request)
    return provider.rec_webhook if kind == "rec" else provider.cobr_webhook


def _slot_not_found() -> Response:
    return problem(404, "WebhookNaoEncontrado", "Webhook não encontrado", "Nenhum webhook.")


async def _put_slot(request: Request, kind: str) -> Response:
    url = await _webhook_url(request, _SLOTS[kind])
    if isinstance(url, Response):
        return url
    _slot(request, kind).register(url)
    return Response(status_code=200)


def _get_slot(request: Request, kind: str) -> Response:
    entry = _slot(request, kind).get()
    return JSONResponse(entry) if entry is not None else _slot_not_found()


def _delete_slot(request: Request, kind: str) -> Response:
    return Response(status_code=204) if _slot(request, kind).remove() else _slot_not_found()


@api_endpoint("PUT /webhookrec", "webhookrec.write")
async def put_webhook_rec(request: Request) -> Response:
    return await _put_slot(request, "rec")


@api_endpoint("GET /webhookrec", "webhookrec.read")
async def get_webhook_rec(request: Request) -> Response:
    return _get_slot(request, "rec")


@api_endpoint("DELETE /webhookrec", "webhookrec.write")
async def delete_webhook_rec(request: Request) -> Response:
    return _delete_slot(request, "rec")


@api_endpoint("PUT /webhookcobr", "webhookcobr.write")
async def put_webhook_cobr(request: Request) -> Response:
    return await _put_slot(request, "cobr")


@api_endpoint("GET /webhookcobr", "webhookcobr.read")
async def get_webhook_cobr(request: Request) -> Response:
    return _get_slot(request, "cobr")


@api_endpoint("DELETE /webhookcobr", "webhookcobr.write")
async def delete_webhook_cobr(request: Request) -> Response:
    return _delete_slot(request, "cobr")
