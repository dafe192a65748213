"""``pixrecon poll``: one poll of the provider, on demand (backfills, or a cron job)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from pixrecon.bootstrap import StartupError, open_database
from reconcile.db import session_scope
from reconcile.polling import poll_received_pix
from reconcile.processing import process_items
from reconcile.provider import factory
from reconcile.schedule import claim, succeeded, window
from reconcile.settings import Settings
from reconcile.timeutil import parse_timestamp, utcnow
from worker.runtime import build_runtime

CLI_OWNER = "pixrecon-poll"


def _when(value: str, name: str) -> Any:
    parsed = parse_timestamp(value)
    if parsed is None:
        raise StartupError(f"--{name} is not an RFC 3339 time: {value!r}")
    return parsed


def poll_once(
    settings: Settings, *, since: str | None, until: str | None, console: Console
) -> dict[str, Any]:
    api = factory.pix_api(settings)
    if api is None:
        raise StartupError(
            "the Pix API is not configured: set PIXRECON_PIX_API_URL, PIXRECON_PIX_CLIENT_ID "
            "and PIXRECON_PIX_CLIENT_SECRET"
        )
    engine = open_database(settings, auto_upgrade=True)
    now = utcnow()
    explicit = since is not None
    if explicit:
        start = _when(since or "", "since")
        end = _when(until, "until") if until else now
    else:
        with session_scope(engine) as session:
            # The same lease as the worker's poller: never two walks of one window at once.
            if not claim(session, "poll_pix", CLI_OWNER, lease=timedelta(minutes=10), now=now):
                raise StartupError(
                    "a worker is polling right now; try again shortly, or give --since"
                )
            start, end = window(
                session,
                "poll_pix",
                now=now,
                overlap=timedelta(seconds=settings.poll_overlap_seconds),
                initial_lookback=timedelta(seconds=settings.poll_initial_lookback_seconds),
            )
    # With a broker the workers process what is found; without one nobody else will, so
    # this process does it.
    runtime = build_runtime(settings, engine) if settings.broker_url else None
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("polling GET /pix", total=None)
        result = poll_received_pix(
            api,
            engine,
            start,
            end,
            on_new=runtime.dispatcher.dispatch if runtime else None,
            on_progress=lambda seen: progress.update(
                task, description=f"polling GET /pix: {seen} Pix seen"
            ),
        )
    processed = 0 if runtime else len(process_items(engine, result.new_ids).processed)
    if not explicit:
        # A backfill does not move the poller's own window.
        with session_scope(engine) as session:
            succeeded(session, "poll_pix", now=utcnow(), window_end=end)
    api.close()
    return {
        "start": start.isoformat(),
        "end": end.isoformat(),
        "seen": result.seen,
        "new": len(result.new_ids),
        "invalid": result.invalid,
        "processed": processed,
    }
