"""Operational endpoints: health and metrics."""

from __future__ import annotations

from datetime import timedelta

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from receiver.ingest import ReceiverContext
from receiver.openapi import build_openapi
from reconcile.db import UNAVAILABLE_ERRORS, session_scope
from reconcile.inbox import oldest_pending_received_at
from reconcile.timeutil import as_utc, utcnow


def routes(ctx: ReceiverContext) -> list[BaseRoute]:
    max_lag = timedelta(seconds=ctx.settings.health_max_lag_seconds)

    def check() -> tuple[int, dict[str, object]]:
        with session_scope(ctx.engine) as session:
            oldest = oldest_pending_received_at(session)
        lag = (utcnow() - as_utc(oldest)).total_seconds() if oldest is not None else 0.0
        body: dict[str, object] = {
            "status": "ok",
            "database": "ok",
            "oldest_pending_seconds": lag,
            "confirmation": ctx.settings.confirmation,
        }
        if lag > max_lag.total_seconds():
            return 503, {**body, "status": "lagging"}
        return 200, body

    async def healthz(_request: Request) -> Response:
        try:
            status, body = await anyio.to_thread.run_sync(check)
        except UNAVAILABLE_ERRORS as exc:
            status, body = (
                503,
                {
                    "status": "unavailable",
                    "database": type(exc).__name__,
                    "confirmation": ctx.settings.confirmation,
                },
            )
        return JSONResponse(body, status_code=status)

    document = build_openapi(ctx.settings.webhook_secret_header)

    async def openapi(_request: Request) -> Response:
        return JSONResponse(document)

    return [
        Route("/healthz", healthz, methods=["GET"], name="healthz"),
        Route("/openapi.json", openapi, methods=["GET"], name="openapi"),
        Route("/metrics", ctx.metrics.endpoint, methods=["GET"], name="metrics"),
    ]
