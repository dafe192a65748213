"""GET, HEAD and OPTIONS on a webhook URL: a provider checking the URL it is registering
(or checking it again later) before it posts anything to it.

Answered 405, such a probe counts towards the provider disabling the webhook, as a refused
delivery does. So every webhook route answers it as a working URL: GET and HEAD with 200
and a few words of JSON, OPTIONS with 204 and the methods it takes.

No credential is asked for. A probe has no body, and nothing is read from it or stored;
a provider may send it before the secret header is configured, or without the header it
adds to deliveries, and a 401 would count against the webhook as the 405 did. Nothing
leaks by it: the answer is the same constant text for every caller, naming no setting,
client or version, and says no more than the 405's ``Allow`` already did — that the path
takes POST."""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from receiver.metrics import route_label
from reconcile.logs import get_logger

log = get_logger(__name__)

PROBES = frozenset({"GET", "HEAD", "OPTIONS"})
ALLOW = "POST, GET, HEAD, OPTIONS"
ANSWER: dict[str, Any] = {
    "status": "ok",
    "method": "POST",
    "stored": False,
    "detail": "this URL receives webhook notifications, posted as JSON; nothing was stored",
}
_BODY = json.dumps(ANSWER, separators=(",", ":")).encode()
# A cache between the provider and us must not answer a later probe in our place.
_HEADERS = {"Allow": ALLOW, "Cache-Control": "no-store"}


def is_probe(scope: Scope) -> bool:
    return scope.get("method") in PROBES


class Probed:
    """A webhook route's app: probes are answered here, anything else goes on to ``app``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"]
        if method not in PROBES:
            await self.app(scope, receive, send)
            return
        # The route's template, never the path: ``{kind}`` is whatever a client sends.
        log.info("webhook_probed", route=route_label(scope), method=method)
        if method == "OPTIONS":
            answer = Response(status_code=204, headers=_HEADERS)
        else:
            # For HEAD, Starlette sends the headers GET would, without the body.
            answer = Response(_BODY, headers=_HEADERS, media_type="application/json")
        await answer(scope, receive, send)


def webhook_route(path: str, app: ASGIApp, *, name: str | None = None) -> Route:
    """A webhook route: POST goes to ``app``, probes are answered (``Probed``)."""
    return Route(path, Probed(app), methods=["POST", *sorted(PROBES)], name=name)
