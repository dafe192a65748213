"""The QR code API (BCB standard) callbacks. One URL is registered,
``/webhooks/qrcode``; the provider appends ``/pix``, ``/rec`` or ``/cobr``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.routing import BaseRoute

from receiver.auth import WebhookAuth
from receiver.ingest import Parse, ReceiverContext, webhook_endpoint
from receiver.probe import webhook_route
from reconcile.inbox import NewItem
from reconcile.payloads.automatico import cobr_callback_items, rec_callback_items
from reconcile.payloads.pix import pix_callback_items

Read = Callable[[Any], list[NewItem]]


def _bare(document: Any, request: Request) -> list[NewItem]:
    """What arrives at the registered URL itself: Pix, unless the body or the URL says
    otherwise. A merchant who registers ``…/webhooks/qrcode?ignorar=`` (so that what the
    provider appends lands in the query string) gets recurrences and recurring charges
    here too: the query string's ending, else the body's wrapper, tells them apart."""
    return _as_said(document, request, pix_callback_items)


def _as_said(document: Any, request: Request, otherwise: Read) -> list[NewItem]:
    query = request.scope.get("query_string", b"").rstrip(b"/")
    if query.endswith(b"/rec") or _wraps(document, "recs"):
        return rec_callback_items(document)
    if query.endswith(b"/cobr") or _wraps(document, "cobsr"):
        return cobr_callback_items(document)
    if query.endswith(b"/pix") or (isinstance(document, dict) and "pix" in document):
        return pix_callback_items(document)
    return otherwise(document)


def _wraps(document: Any, wrapper: str) -> bool:
    return isinstance(document, dict) and wrapper in document and "pix" not in document


def _routed(wrapper: str, read: Read) -> Parse:
    """A route's own body (``{wrapper: …}``) is read as ever, with nothing more asked of
    it. Any other is read as the query string's ending or the body's wrapper says, as at
    the registered URL: a URL registered with its route and ``?ignorar=``
    (``…/webhooks/qrcode/pix?ignorar=``) for Pix Automático too gets recurrences there,
    ``…/pix?ignorar=/rec``. Stored as unsupported, a recurrence would never decide its
    cycles, nor a recurring charge its payment."""

    def parse(document: Any, request: Request) -> list[NewItem]:
        if isinstance(document, dict) and wrapper in document:
            return read(document)
        return _as_said(document, request, read)

    return parse


def routes(ctx: ReceiverContext) -> list[BaseRoute]:
    auth = WebhookAuth(ctx.settings, "qrcode")
    return [
        webhook_route(
            "/webhooks/qrcode/pix",
            webhook_endpoint(ctx, auth, _routed("pix", pix_callback_items)),
            name="qrcode_pix",
        ),
        # Some providers post to the bare registered URL.
        webhook_route("/webhooks/qrcode", webhook_endpoint(ctx, auth, _bare), name="qrcode_bare"),
        webhook_route(
            "/webhooks/qrcode/rec", webhook_endpoint(ctx, auth, _routed("recs", rec_callback_items))
        ),
        webhook_route(
            "/webhooks/qrcode/cobr",
            webhook_endpoint(ctx, auth, _routed("cobsr", cobr_callback_items)),
        ),
    ]
