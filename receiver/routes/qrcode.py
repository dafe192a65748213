"""The QR code API (BCB standard) callbacks. One URL is registered,
``/webhooks/qrcode``; the provider appends ``/pix``, ``/rec`` or ``/cobr``."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.routing import BaseRoute

from receiver.auth import WebhookAuth
from receiver.ingest import ReceiverContext, webhook_endpoint
from receiver.probe import webhook_route
from reconcile.inbox import NewItem
from reconcile.payloads.automatico import cobr_callback_items, rec_callback_items
from reconcile.payloads.pix import pix_callback_items


def _pix(document: Any, _request: Request) -> list[NewItem]:
    return pix_callback_items(document)


def _rec(document: Any, _request: Request) -> list[NewItem]:
    return rec_callback_items(document)


def _cobr(document: Any, _request: Request) -> list[NewItem]:
    return cobr_callback_items(document)


def _bare(document: Any, request: Request) -> list[NewItem]:
    """What arrives at the registered URL itself: Pix, unless the body or the URL says
    otherwise. A merchant who registers ``…/webhooks/qrcode?ignorar=`` (so that what the
    provider appends lands in the query string) gets recurrences and recurring charges
    here too: the query string's ending, else the body's wrapper, tells them apart."""
    query = request.scope.get("query_string", b"").rstrip(b"/")
    if query.endswith(b"/rec") or _wraps(document, "recs"):
        return rec_callback_items(document)
    if query.endswith(b"/cobr") or _wraps(document, "cobsr"):
        return cobr_callback_items(document)
    return pix_callback_items(document)


def _wraps(document: Any, wrapper: str) -> bool:
    return isinstance(document, dict) and wrapper in document and "pix" not in document


def routes(ctx: ReceiverContext) -> list[BaseRoute]:
    auth = WebhookAuth(ctx.settings, "qrcode")
    return [
        webhook_route("/webhooks/qrcode/pix", webhook_endpoint(ctx, auth, _pix), name="qrcode_pix"),
        # Some providers post to the bare registered URL.
        webhook_route("/webhooks/qrcode", webhook_endpoint(ctx, auth, _bare), name="qrcode_bare"),
        webhook_route("/webhooks/qrcode/rec", webhook_endpoint(ctx, auth, _rec)),
        webhook_route("/webhooks/qrcode/cobr", webhook_endpoint(ctx, auth, _cobr)),
    ]
