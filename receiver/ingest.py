"""Verify → persist → return: the one pipeline every webhook route goes through."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Engine
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from receiver.auth import WebhookAuth
from receiver.body import CLIENT_GONE, decode_body, parse_json, read_body
from receiver.group_commit import GroupCommitter, Overloaded, Stalled
from receiver.metrics import ReceiverMetrics, route_label
from receiver.problems import Problem, overloaded, storage_stalled, storage_unavailable
from receiver.quarantine import QuarantineWriter
from reconcile.db import UNAVAILABLE_ERRORS
from reconcile.inbox import Delivery, NewItem
from reconcile.logs import get_logger
from reconcile.models import stored_route
from reconcile.payloads import ItemWarning, PayloadInvalid
from reconcile.settings import Settings

log = get_logger(__name__)

# Turns a parsed JSON document (and the request, for path parameters) into inbox items.
Parse = Callable[[Any, Request], list[NewItem]]
Endpoint = Callable[[Request], Awaitable[Response]]


@dataclass
class ReceiverContext:
    settings: Settings
    engine: Engine
    committer: GroupCommitter
    metrics: ReceiverMetrics
    quarantine: QuarantineWriter


def _selected_headers(request: Request, redacted: frozenset[str]) -> dict[str, str]:
    return {name: value for name, value in request.headers.items() if name not in redacted}


class WebhookRoute:
    """A webhook endpoint as the ASGI app of its route.

    Starlette wraps a function endpoint in an exception-handling layer of its own, which
    repeats what the app's ``ExceptionMiddleware`` does with the same handlers (a
    ``Problem`` becomes its problem+json answer either way); on the busiest path that
    second layer cost the event loop a few percent of each delivery."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.endpoint(Request(scope, receive, send))
        await response(scope, receive, send)


def webhook_endpoint(ctx: ReceiverContext, auth: WebhookAuth, parse: Parse) -> WebhookRoute:
    """Authenticate before reading, read within the limit, authenticate the body (HMAC),
    parse, validate, store, answer — and quarantine whatever is refused."""
    redacted = auth.redacted_headers()

    async def endpoint(request: Request) -> Response:
        body: bytes | None = None
        authenticated = False
        try:
            auth.check_request(request)
            body = await read_body(
                request, ctx.settings.max_body_bytes, ctx.settings.body_timeout_seconds
            )
            auth.check_body(request, body)
            authenticated = True
            flags: list[str] = []
            body = decode_body(request, body, ctx.settings.max_body_bytes, flags)
            document = parse_json(request, body, flags)
            try:
                items = parse(document, request)
            except PayloadInvalid as exc:
                raise Problem(
                    400, "invalid-notification", exc.detail, violations=exc.violations
                ) from None
            if flags:
                items = flagged(items, flags)
            return await _accept(ctx, request, auth, redacted, body, items)
        except Problem as problem:
            if problem.status != 503 and problem.slug != CLIENT_GONE:
                await ctx.quarantine.record(
                    request,
                    problem,
                    remote_addr=auth.client_ip(request),
                    headers=_selected_headers(request, redacted),
                    # An anonymous body is nobody's data to keep; its size is enough.
                    body=body if authenticated else None,
                    body_size=len(body) if body is not None else None,
                )
            ctx.metrics.refusals.labels(route_label(request.scope), problem.slug).inc()
            # The route's template, never the path: ``{kind}`` is whatever a client sends,
            # a CPF or a name as well (the quarantined row keeps the path itself).
            log.info(
                "webhook_refused",
                route=route_label(request.scope),
                status=problem.status,
                reason=problem.slug,
            )
            raise

    return WebhookRoute(endpoint)


def flagged(items: list[NewItem], flags: list[str]) -> list[NewItem]:
    """Every item of a body that was read otherwise than HTTP and JSON say (compressed in
    name only, in another charset than declared, with repeated member names) carries it,
    at the body's root: it is the whole delivery's, and the raw body shows it."""
    said = "; ".join(dict.fromkeys(flags))

    def with_flag(item: NewItem) -> NewItem:
        root = next((w for w in item.warnings if w.pointer == "/"), None)
        first = ItemWarning("/", said if root is None else f"{root.expected}; {said}")
        return replace(item, warnings=(first, *(w for w in item.warnings if w.pointer != "/")))

    return [with_flag(item) for item in items]


# Array indexes would make a label value per position; the field is what matters.
_INDEX = re.compile(r"/[0-9]+(?=/|$)")


def _count_warnings(metrics: ReceiverMetrics, items: Sequence[NewItem]) -> None:
    for item in items:
        for warning in item.warnings:
            metrics.warnings.labels(item.kind, _INDEX.sub("/*", warning.pointer)).inc()
        if item.warnings:
            # Not the key: a status or a time read otherwise than documented goes into it
            # as sent, free text nobody masks. ``pixrecon events --ref`` finds the item.
            log.info(
                "item_read_with_warnings",
                kind=item.kind,
                fields=[w.pointer for w in item.warnings],
            )


async def _accept(
    ctx: ReceiverContext,
    request: Request,
    auth: WebhookAuth,
    redacted: frozenset[str],
    body: bytes,
    items: Sequence[NewItem],
) -> Response:
    """Store the delivery and its items (sharing a transaction with whatever else is
    arriving), then answer; the committer sends new items to the workers after commit."""
    # The path as routed, not ``request.url``: building the URL cost the loop about 10 µs.
    route: str = request.scope["path"]
    delivery = Delivery(
        route=stored_route(route),
        remote_addr=auth.client_ip(request),
        headers=_selected_headers(request, redacted),
        body=body,
        items=items,
    )
    try:
        result = await ctx.committer.store(delivery)
    except Overloaded as exc:
        raise overloaded(str(exc)) from None
    except Stalled as exc:
        log.error("storage_stalled", route=route_label(request.scope), error=str(exc))
        raise storage_stalled(str(exc)) from None
    except UNAVAILABLE_ERRORS as exc:
        log.error("storage_unavailable", route=route_label(request.scope), error=type(exc).__name__)
        raise storage_unavailable() from None
    ctx.metrics.stored(route_label(request.scope), len(result.new_ids), result.duplicates)
    if any(item.warnings for item in items):
        # A provider's retry repeats the warnings of an item it already brought.
        new = set(result.new_keys)
        _count_warnings(ctx.metrics, [item for item in items if item.key in new])
    # At DEBUG: a JSON line costs about 80 µs of the event loop's CPU, a sixth of what a
    # delivery costs, and the delivery itself is kept in webhook_delivery with its time,
    # route and request headers; refusals, rarer and kept in quarantine too, stay at INFO.
    log.debug(
        "webhook_accepted",
        route=route_label(request.scope),
        items=len(items),
        new=len(result.new_ids),
        duplicates=result.duplicates,
    )
    # The bytes JSONResponse would render from the same three numbers, without the encoder.
    return Response(
        f'{{"items":{len(items)},"new":{len(result.new_ids)},"duplicates":{result.duplicates}}}',
        media_type="application/json",
    )
