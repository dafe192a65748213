"""Operational endpoints: health, readiness, the OpenAPI document and metrics.

``/healthz`` is for monitoring: it answers 503 whenever something needs a person — the
database is down, inbox items wait too long, a periodic job has stopped succeeding — and
says what in ``problems``. ``/readyz`` is for load balancers: only whether this process
can store a delivery now, so a lagging worker never takes receivers out of rotation."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from receiver.ingest import ReceiverContext
from receiver.openapi import build_openapi
from reconcile.db import UNAVAILABLE_ERRORS, read_scope
from reconcile.inbox import oldest_pending_received_at
from reconcile.schedule import JobHealth, job_health
from reconcile.timeutil import as_utc, utcnow

# /readyz gives the database this long to answer a trivial query.
READY_TIMEOUT_SECONDS = 2.0
# /healthz, this long for its few reads: a monitor must get an answer, not a timeout.
HEALTH_TIMEOUT_SECONDS = 5.0


def _database_down(reason: str) -> str:
    return (
        f"the database does not answer ({reason}): check that it is running and that "
        "PIXRECON_DATABASE_URL points at it; deliveries are answered 503 until it does"
    )


def _lag_problem(lag: float, max_lag: float) -> str:
    return (
        f"the oldest unprocessed inbox item has waited {lag:.0f} s, more than "
        f"PIXRECON_HEALTH_MAX_LAG_SECONDS={max_lag:g}: check that the workers are running "
        "and reach the broker (`pixrecon events --status pending` lists what waits)"
    )


def _job_problem(job: JobHealth) -> str:
    age = f"{job.seconds_without_success:.0f} s"
    if job.last_success_at is None:
        what = f"periodic job {job.name} has not succeeded since this receiver started {age} ago"
    else:
        what = f"periodic job {job.name} last succeeded {age} ago"
    limit = f"more than {job.max_age_seconds:g} s (PIXRECON_HEALTH_MAX_JOB_AGE_SECONDS)"
    if job.last_error is not None:
        error = job.last_error.partition(":")[0]
        why = (
            f"its last run failed with {error} (the workers' `job_failed` log and "
            f"scheduled_job.last_error say why)"
        )
    elif job.running:
        why = "a run holds its lease now: if it is stuck, restart the worker that runs it"
    else:
        why = (
            "no run of it is failing, so no worker runs it: start `pixrecon worker` with "
            "PIXRECON_SCHEDULER_ENABLED=1, or `pixrecon serve` without PIXRECON_BROKER_URL"
        )
    return f"{what}, {limit}: {why}"


def _job_fields(job: JobHealth) -> dict[str, object]:
    return {
        "last_success_at": job.last_success_at.isoformat() if job.last_success_at else None,
        "seconds_without_success": job.seconds_without_success,
        "max_age_seconds": job.max_age_seconds,
        "failing": job.failing,
        "running": job.running,
    }


def routes(ctx: ReceiverContext) -> list[BaseRoute]:
    settings = ctx.settings
    max_lag = settings.health_max_lag_seconds
    # A job that never succeeded is given one threshold from here to run the first time.
    started = utcnow()

    def check() -> tuple[int, dict[str, object]]:
        with read_scope(ctx.engine) as session:
            oldest = oldest_pending_received_at(session)
            now = utcnow()
            jobs = job_health(session, settings, now=now, since=started)
        lag = (now - as_utc(oldest)).total_seconds() if oldest is not None else 0.0
        problems = [_lag_problem(lag, max_lag)] if lag > max_lag else []
        problems += [_job_problem(job) for job in jobs if job.overdue]
        body: dict[str, object] = {
            "status": "unhealthy" if problems else "ok",
            "problems": problems,
            "database": "ok",
            "oldest_pending_seconds": lag,
            "jobs": {job.name: _job_fields(job) for job in jobs},
            "confirmation": settings.confirmation,
        }
        return (503 if problems else 200), body

    health_errors: tuple[type[Exception], ...] = (TimeoutError, *UNAVAILABLE_ERRORS)

    async def healthz(_request: Request) -> Response:
        try:
            with anyio.fail_after(HEALTH_TIMEOUT_SECONDS):
                status, body = await anyio.to_thread.run_sync(check, abandon_on_cancel=True)
        except health_errors as exc:
            timeout = isinstance(exc, TimeoutError)
            reason = (
                f"no answer within {HEALTH_TIMEOUT_SECONDS:g} s" if timeout else type(exc).__name__
            )
            status = 503
            body = {
                "status": "unavailable",
                "problems": [_database_down(reason)],
                "database": "timeout" if timeout else type(exc).__name__,
                "oldest_pending_seconds": None,
                "jobs": None,
                "confirmation": settings.confirmation,
            }
        return JSONResponse(body, status_code=status)

    # What a trivial query may raise: wrapped by SQLAlchemy while connecting, the driver's
    # own errors once connected.
    dbapi_error: type[Exception] = ctx.engine.dialect.loaded_dbapi.Error
    ping_errors = (*UNAVAILABLE_ERRORS, dbapi_error)

    def ping() -> None:
        # On the driver's connection: no transaction (on SQLite a session would queue for
        # the write lock behind the workers).
        connection: Any = ctx.engine.raw_connection()
        try:
            cursor = connection.cursor()
            cursor.execute("SELECT 1")
            cursor.fetchone()
            cursor.close()
        finally:
            connection.close()

    async def readyz(_request: Request) -> Response:
        try:
            with anyio.fail_after(READY_TIMEOUT_SECONDS):
                await anyio.to_thread.run_sync(ping, abandon_on_cancel=True)
        except TimeoutError:
            database = "timeout"
            reason = f"no answer to SELECT 1 within {READY_TIMEOUT_SECONDS:g} s"
        except ping_errors as exc:
            database = reason = type(exc).__name__
        else:
            return JSONResponse({"status": "ok", "problems": [], "database": "ok"})
        body = {"status": "unavailable", "problems": [_database_down(reason)], "database": database}
        return JSONResponse(body, status_code=503)

    document = build_openapi(settings.webhook_secret_header)

    async def openapi(_request: Request) -> Response:
        return JSONResponse(document)

    return [
        Route("/healthz", healthz, methods=["GET"], name="healthz"),
        Route("/readyz", readyz, methods=["GET"], name="readyz"),
        Route("/openapi.json", openapi, methods=["GET"], name="openapi"),
        Route("/metrics", ctx.metrics.endpoint, methods=["GET"], name="metrics"),
    ]
