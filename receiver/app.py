"""The receiver application: explicit routes, middleware and error handlers."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Engine
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response

from receiver.ingest import Dispatch, ReceiverContext
from receiver.metrics import ReceiverMetrics
from receiver.middleware import RequestContextMiddleware
from receiver.problems import Problem, handle_problem, problem_response
from receiver.quarantine import QuarantineWriter
from receiver.routes import accounts, ops, qrcode
from reconcile.settings import Settings


def _ignore(_ids: Sequence[int]) -> None:
    # Without a dispatcher the sweeper of a worker process picks the items up.
    return None


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    problem = Problem(exc.status_code, "http-error", str(exc.detail), headers=exc.headers)
    return problem_response(problem, getattr(request.state, "request_id", None))


def create_app(settings: Settings, engine: Engine, dispatch: Dispatch | None = None) -> Starlette:
    metrics = ReceiverMetrics()
    ctx = ReceiverContext(
        settings=settings,
        engine=engine,
        dispatch=dispatch or _ignore,
        metrics=metrics,
        quarantine=QuarantineWriter(engine, max_rows=settings.quarantine_max_rows),
    )
    return Starlette(
        routes=[*qrcode.routes(ctx), *accounts.routes(ctx), *ops.routes(ctx)],
        middleware=[Middleware(RequestContextMiddleware, metrics=metrics)],
        exception_handlers={Problem: handle_problem, HTTPException: _http_error},
    )
