"""The QR code API (BCB standard) callbacks. One URL is registered,
``/webhooks/qrcode``; the provider appends ``/pix``, ``/rec`` or ``/cobr``."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.routing import BaseRoute, Route

from receiver.auth import WebhookAuth
from receiver.ingest import ReceiverContext, webhook_endpoint
from reconcile.inbox import NewItem
from reconcile.payloads.automatico import cobr_callback_items, rec_callback_items
from reconcile.payloads.pix import pix_callback_items


def _pix(document: Any, _request: Request) -> list[NewItem]:
    return pix_callback_items(document)


def _rec(document: Any, _request: Request) -> list[NewItem]:
    return rec_callback_items(document)


def _cobr(document: Any, _request: Request) -> list[NewItem]:
    return cobr_callback_items(document)


def routes(ctx: ReceiverContext) -> list[BaseRoute]:
    auth = WebhookAuth(ctx.settings, "qrcode")
    pix = webhook_endpoint(ctx, auth, _pix)
    return [
        Route("/webhooks/qrcode/pix", pix, methods=["POST"], name="qrcode_pix"),
        # Some providers post Pix to the bare registered URL.
        Route("/webhooks/qrcode", pix, methods=["POST"], name="qrcode_bare"),
        Route("/webhooks/qrcode/rec", webhook_endpoint(ctx, auth, _rec), methods=["POST"]),
        Route("/webhooks/qrcode/cobr", webhook_endpoint(ctx, auth, _cobr), methods=["POST"]),
    ]
