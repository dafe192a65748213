"""The receiver application: explicit routes, middleware and error handlers."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence

from prometheus_client.registry import Collector
from sqlalchemy import Engine
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response

from receiver.backpressure import InFlightLimit
from receiver.group_commit import GroupCommitter
from receiver.ingest import ReceiverContext
from receiver.metrics import ReceiverMetrics
from receiver.middleware import RequestContextMiddleware, WebhookPaths
from receiver.outbox import Dispatch, Outbox
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


def create_app(
    settings: Settings,
    engine: Engine,
    dispatch: Dispatch | None = None,
    *,
    state_metrics: Collector | None = None,
) -> Starlette:
    """``state_metrics``: gauges read from the database, which ``/metrics`` serves in
    single-node mode (in production the workers' metrics server does)."""
    metrics = ReceiverMetrics(state_metrics)
    outbox = Outbox(dispatch or _ignore)
    committer = GroupCommitter(
        engine,
        _after_commit(metrics, outbox),
        max_waiting=settings.max_waiting_deliveries,
        deadline=settings.commit_deadline_seconds,
    )
    ctx = ReceiverContext(
        settings=settings,
        engine=engine,
        committer=committer,
        metrics=metrics,
        quarantine=QuarantineWriter(engine, max_rows=settings.quarantine_max_rows),
    )

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        await committer.start()
        yield
        # Requests have been answered by now: finish the last transaction, then hand its
        # ids to the broker before the process goes.
        await committer.aclose()
        committer.stop()
        outbox.stop()

    return Starlette(
        routes=[*qrcode.routes(ctx), *accounts.routes(ctx), *ops.routes(ctx)],
        middleware=[
            Middleware(WebhookPaths),
            Middleware(RequestContextMiddleware, metrics=metrics),
            Middleware(InFlightLimit, limit=settings.max_waiting_deliveries, metrics=metrics),
        ],
        exception_handlers={Problem: handle_problem, HTTPException: _http_error},
        lifespan=lifespan,
    )


def _after_commit(metrics: ReceiverMetrics, outbox: Outbox) -> Callable[[list[int], int], None]:
    def after_commit(new_ids: list[int], deliveries: int) -> None:
        metrics.commit_batch.observe(deliveries)
        outbox.put(new_ids)

    return after_commit
