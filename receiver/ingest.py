"""Verify → persist → return: the one pipeline every webhook route goes through."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from sqlalchemy import Engine
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from receiver.auth import WebhookAuth
from receiver.body import parse_json, read_body
from receiver.metrics import ReceiverMetrics
from receiver.problems import Problem, storage_unavailable
from receiver.quarantine import QuarantineWriter
from reconcile.db import UNAVAILABLE_ERRORS, session_scope
from reconcile.inbox import NewItem, StoreResult, record_delivery, store_items
from reconcile.logs import get_logger
from reconcile.models import Source
from reconcile.payloads import PayloadInvalid
from reconcile.settings import Settings

log = get_logger(__name__)

Dispatch = Callable[[Sequence[int]], object]
# Turns a parsed JSON document (and the request, for path parameters) into inbox items.
Parse = Callable[[Any, Request], list[NewItem]]
Endpoint = Callable[[Request], Awaitable[Response]]


@dataclass
class ReceiverContext:
    settings: Settings
    engine: Engine
    dispatch: Dispatch
    metrics: ReceiverMetrics
    quarantine: QuarantineWriter


def _selected_headers(request: Request, redacted: frozenset[str]) -> dict[str, str]:
    return {name: value for name, value in request.headers.items() if name not in redacted}


def webhook_endpoint(ctx: ReceiverContext, auth: WebhookAuth, parse: Parse) -> Endpoint:
    """Authenticate before reading, read within the limit, authenticate the body (HMAC),
    parse, validate, store, answer — and quarantine whatever is refused."""
    redacted = auth.redacted_headers()

    async def endpoint(request: Request) -> Response:
        body: bytes | None = None
        authenticated = False
        try:
            auth.check_request(request)
            body = await read_body(request, ctx.settings.max_body_bytes)
            auth.check_body(request, body)
            authenticated = True
            document = parse_json(request, body)
            try:
                items = parse(document, request)
            except PayloadInvalid as exc:
                raise Problem(
                    400, "invalid-notification", exc.detail, violations=exc.violations
                ) from None
            return await _accept(ctx, request, auth, redacted, body, items)
        except Problem as problem:
            if problem.status != 503:
                await ctx.quarantine.record(
                    request,
                    problem,
                    remote_addr=auth.client_ip(request),
                    headers=_selected_headers(request, redacted),
                    # An anonymous body is nobody's data to keep; its size is enough.
                    body=body if authenticated else None,
                    body_size=len(body) if body is not None else None,
                )
            log.info(
                "webhook_refused",
                route=request.url.path,
                status=problem.status,
                reason=problem.slug,
            )
            raise

    return endpoint


def _store(
    ctx: ReceiverContext,
    request: Request,
    remote_addr: str | None,
    headers: dict[str, str],
    body: bytes,
    items: Sequence[NewItem],
) -> StoreResult:
    with session_scope(ctx.engine) as session:
        delivery_id = record_delivery(
            session,
            route=request.url.path,
            remote_addr=remote_addr,
            headers=headers,
            body=body,
            item_count=len(items),
        )
        return store_items(session, items, source=Source.WEBHOOK, delivery_id=delivery_id)


async def _accept(
    ctx: ReceiverContext,
    request: Request,
    auth: WebhookAuth,
    redacted: frozenset[str],
    body: bytes,
    items: Sequence[NewItem],
) -> JSONResponse:
    """Store the delivery and its items in one transaction, then answer; the items are
    sent to the workers only after the response, and only once committed."""
    route = request.url.path
    try:
        result = await anyio.to_thread.run_sync(
            _store,
            ctx,
            request,
            auth.client_ip(request),
            _selected_headers(request, redacted),
            body,
            items,
        )
    except UNAVAILABLE_ERRORS as exc:
        log.error("storage_unavailable", route=route, error=type(exc).__name__)
        raise storage_unavailable() from None
    ctx.metrics.items.labels(route, "new").inc(len(result.new_ids))
    ctx.metrics.items.labels(route, "duplicate").inc(result.duplicates)
    log.info(
        "webhook_accepted",
        route=route,
        items=len(items),
        new=len(result.new_ids),
        duplicates=result.duplicates,
    )
    task = BackgroundTask(ctx.dispatch, result.new_ids) if result.new_ids else None
    return JSONResponse(
        {"items": len(items), "new": len(result.new_ids), "duplicates": result.duplicates},
        status_code=200,
        background=task,
    )
