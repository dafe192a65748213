"""Cross-cutting request handling: webhook paths as registered URLs produce them, request
ids bound to every log line, metrics."""

from __future__ import annotations

import itertools
import os
import re
import time

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from receiver.metrics import ReceiverMetrics, route_label
from receiver.probe import is_probe
from receiver.problems import problem_response, unexpected
from reconcile.logs import get_logger

log = get_logger(__name__)

REQUEST_ID_HEADER = "x-request-id"
_HEADER = REQUEST_ID_HEADER.encode()


_SLASHES = re.compile(r"/{2,}")
# The paths routed as they come: nearly every delivery's, answered after one set look-up.
_ROUTED = frozenset(
    (
        "/webhooks/qrcode/pix",
        "/webhooks/qrcode",
        "/webhooks/qrcode/rec",
        "/webhooks/qrcode/cobr",
        "/webhooks/accounts",
        "/webhooks/accounts/transfer",
        "/webhooks/accounts/receive",
        "/webhooks/accounts/refund",
        "/webhooks/accounts/cashout",
        "/webhooks/accounts/infraction",
    )
)
_QR_ROUTES = frozenset(("pix", "rec", "cobr"))


def webhook_path(path: str) -> str:
    """The route a webhook URL as registered means; other paths as they are."""
    if path in _ROUTED:
        return path
    normal = path
    if "//" in normal or (normal.endswith("/") and normal != "/"):
        normal = _SLASHES.sub("/", normal).rstrip("/")
    # A merchant may type the URL in another letter case (``/Webhooks/QRCode/Pix``): the
    # fixed segments are read in any case; an accounts type keeps its own (the body's
    # ``type`` is compared in capitals anyway).
    segments = normal.split("/")
    if len(segments) < 2 or segments[0]:
        return path
    if segments[1].lower() != "webhooks":
        # Behind a reverse proxy that forwards a path prefix (``/api/webhooks/qrcode/pix``,
        # the receiver published under ``/api``): the path from its first ``webhooks``
        # segment on is the route. Answered 404, every delivery would count towards the
        # provider disabling the webhook; a path without that segment is no webhook's.
        start = next((i for i, s in enumerate(segments) if s.lower() == "webhooks"), None)
        if start is None:
            return path
        segments = ["", *segments[start:]]
    fixed = 3 if len(segments) > 2 and segments[2].lower() == "accounts" else len(segments)
    segments[1:fixed] = [segment.lower() for segment in segments[1:fixed]]
    family = segments[2] if len(segments) > 2 else ""
    if family == "qrcode" and len(segments) > 3:
        # A merchant who registers the full ``…/webhooks/qrcode/pix`` gets whatever the
        # provider appends after it: ``/pix``, and ``/rec`` and ``/cobr`` when the same URL
        # serves Pix Automático too; one who registers ``…/webhooks/qrcode/loja1`` (a store,
        # a key) gets ``…/loja1/pix``. The appended segment, the last, says what it is; a
        # path ending in none is the registered URL's, whose body says what it is. Only
        # the route is kept: a segment of the merchant's may be personal data.
        last = segments[-1]
        segments[3:] = [last] if last in _QR_ROUTES else []
    elif family == "accounts" and len(segments) == 5 and segments[3].lower() == segments[4].lower():
        # ``…/webhooks/accounts/transfer`` registered, the type appended once more.
        del segments[4]
    return "/".join(segments)


class WebhookPaths:
    """A webhook URL registered with a trailing slash (``…/webhooks/qrcode/``) makes the
    provider post to ``…/webhooks/qrcode//pix``, and some senders add a trailing slash of
    their own; one registered with its route (``…/webhooks/qrcode/pix``) makes it post to
    ``…/webhooks/qrcode/pix/pix`` (and ``…/pix/rec``, ``…/pix/cobr``). Answering those
    404, or a redirect the sender may not follow, counts towards the provider disabling
    the webhook: repeated and trailing slashes of a webhook path are dropped before
    routing, a QR code path is routed by its last segment (the registered URL's when that
    names no route: ``…/webhooks/qrcode/loja1`` registered), an accounts type repeated is
    read once, the fixed segments are read in any letter case (a merchant may type
    ``…/Webhooks/QRCode``), and a prefix before the ``webhooks`` segment, which a reverse
    proxy publishing the receiver under a path of its own forwards, is dropped."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path: str = scope["path"]
            normal = webhook_path(path)
            if normal != path:
                scope = {**scope, "path": normal, "raw_path": normal.encode()}
        await self.app(scope, receive, send)


class RequestIds:
    """32 hex digits, unique per request: a random prefix drawn once per process and a
    counter. uuid4 reads the OS's random source on every request, which on a busy receiver
    showed as 5 % of the event loop's samples (waiting for the GIL back after the read)."""

    def __init__(self) -> None:
        self._prefix = os.urandom(6).hex()
        self._counter = itertools.count()

    def next(self) -> str:
        return f"{self._prefix}{next(self._counter):020x}"


class RequestContextMiddleware:
    def __init__(self, app: ASGIApp, metrics: ReceiverMetrics) -> None:
        self.app = app
        self.metrics = metrics
        self.ids = RequestIds()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = next((v for k, v in scope["headers"] if k == _HEADER), b"").decode("latin-1")
        # Accept a caller's id only when it looks like one, so logs cannot be injected.
        request_id = incoming if 0 < len(incoming) <= 64 and incoming.isprintable() else ""
        request_id = request_id or self.ids.next()
        scope.setdefault("state", {})["request_id"] = request_id
        began = time.perf_counter()
        path: str = scope["path"]
        # A probe is no delivery: counted, it would dilute the share of refused ones the
        # alerts watch, and the acknowledgement times.
        delivery = path.startswith("/webhooks/") and not is_probe(scope)
        answering = False

        async def send_with_id(message: Message) -> None:
            nonlocal answering
            if message["type"] == "http.response.start":
                answering = True
                message.setdefault("headers", [])
                message["headers"].append((_HEADER, request_id.encode()))
                if delivery:
                    self.metrics.answered(
                        route_label(scope), message["status"], time.perf_counter() - began
                    )
            await send(message)

        # Bound and reset by hand rather than with ``bound_contextvars``: one generator and
        # context manager fewer per request on the event loop.
        tokens = structlog.contextvars.bind_contextvars(request_id=request_id)
        try:
            await self.app(scope, receive, send_with_id)
        except Exception as exc:
            # One line, and only the error's type: the message of a database error holds
            # the parameters it was given, a delivery's body among them.
            log.error("unexpected_error", route=route_label(scope), error=type(exc).__name__)
            if answering:
                return  # too late for an answer; the server closes the connection
            answer = problem_response(unexpected(), request_id)
            await answer(scope, receive, send_with_id)
        finally:
            structlog.contextvars.reset_contextvars(**tokens)
