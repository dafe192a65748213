"""``pixrecon poll``: one poll of the provider on demand (backfills, or a cron job) —
the same fetch as the worker's periodic polling jobs, under the same leases."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta
from typing import Annotated, Any

import typer
from rich.progress import Progress
from rich.table import Table
from sqlalchemy import Engine

from pixrecon.bootstrap import setup_logging
from pixrecon.commands.common import (
    FormatOption,
    Interrupted,
    OutputFormat,
    broker_or_exit,
    console,
    database_or_exit,
    fail,
    moment_option,
    one_line,
    progress,
    provider_advice,
)
from reconcile.db import UNAVAILABLE_ERRORS
from reconcile.polling.day import configured, fetch_window, poll_resuming
from reconcile.processing import process_items
from reconcile.provider.errors import ProviderError
from reconcile.provider.factory import ProviderClients, provider_clients
from reconcile.settings import Settings, get_settings
from reconcile.timeutil import utcnow

CLI_OWNER = "pixrecon-poll"
POLL_ERRORS: tuple[type[Exception], ...] = (ProviderError, *UNAVAILABLE_ERRORS)
CLI_LEASE = timedelta(minutes=10)


def _poll(
    settings: Settings,
    engine: Engine,
    providers: ProviderClients,
    window: tuple[datetime, datetime] | None,
    shown: Progress,
) -> dict[str, Any]:
    # With a broker the workers process what is found; without one nobody else will, so
    # this process does it, page by page.
    if settings.broker_url:
        from worker.runtime import build_runtime

        on_new: Any = build_runtime(settings, engine).dispatcher.from_polls
    else:

        def on_new(ids: list[int]) -> None:
            process_items(engine, ids)

    task = shown.add_task("polling", total=None)

    def step(name: str) -> None:
        shown.update(task, description=f"polling {name}")

    result: dict[str, Any] = {"seen": 0, "new": 0, "invalid": 0, "settled": 0, "families": {}}
    for family in configured(providers):
        if window is not None:
            # A backfill does not move the poller's own window, nor take its lease.
            start, end = window
            fetched = fetch_window(
                engine, providers, start, end, families=(family,), on_new=on_new, on_step=step
            )
        else:
            resumed = poll_resuming(
                engine,
                providers,
                family,
                settings,
                owner=CLI_OWNER,
                lease=CLI_LEASE,
                on_new=on_new,
                on_step=step,
            )
            if resumed is None:
                raise fail(
                    f"a worker is polling the {family.value} API right now; try again "
                    "shortly, or give --since"
                )
            fetched = resumed
        result["families"][family.value] = {
            "start": fetched.start.isoformat(),
            "end": fetched.end.isoformat(),
            "steps": {
                name: {
                    "seen": r.seen,
                    "new": len(r.new_ids),
                    "invalid": r.invalid,
                    "settled": r.settled,
                }
                for name, r in fetched.steps.items()
            },
        }
        for name in ("seen", "invalid"):
            result[name] += getattr(fetched, name)
        result["new"] += len(fetched.new_ids)
        result["settled"] += sum(r.settled for r in fetched.steps.values())
    windows = result["families"].values()
    result["start"] = min(w["start"] for w in windows)
    result["end"] = max(w["end"] for w in windows)
    result["processed"] = 0 if settings.broker_url else result["new"]
    return result


def poll(
    since: Annotated[
        str | None,
        typer.Option(
            help="start of an explicit window, e.g. 2026-11-22T14:30 (São Paulo time unless "
            "an offset follows); default: resume the poller"
        ),
    ] = None,
    until: Annotated[
        str | None, typer.Option(help="end of the explicit window (same form); default: now")
    ] = None,
    output: FormatOption = OutputFormat.table,
) -> None:
    """Poll the provider once, as the workers' periodic polls do.

    Pix received and charges (QR code API); statement, infractions, payouts in flight,
    invoices and balance (accounts API). What no webhook brought enters the inbox."""
    settings = get_settings()
    setup_logging(settings)
    window = None
    if since is not None:
        window = (
            moment_option(since, "--since"),
            moment_option(until, "--until") if until else utcnow(),
        )
        if window[0] >= window[1]:
            raise fail("--since must be earlier than --until (or than now, without --until)")
    elif until is not None:
        raise fail("--until needs --since: without them the poll resumes the workers' windows")
    providers = provider_clients(settings)
    if not configured(providers):
        raise fail(
            "no provider API is configured: set PIXRECON_QRCODE_API_URL, "
            "PIXRECON_QRCODE_CLIENT_ID and PIXRECON_QRCODE_CLIENT_SECRET (and/or the "
            "PIXRECON_ACCOUNTS_* settings)"
        )
    if settings.broker_url:
        broker_or_exit(settings, reachable=False)
    engine = database_or_exit(settings, auto_upgrade=False)
    try:
        with progress() as shown:
            result = _poll(settings, engine, providers, window, shown)
    except KeyboardInterrupt:
        # What was stored before the interrupt stays; what was not is fetched again.
        again = "run it again with the same --since" if window else "the next poll resumes it"
        raise Interrupted(
            "the poll stopped before it finished (Ctrl-C or SIGTERM): what it had stored is "
            f"kept, the rest of the window was not fetched ({again}); its lease is given back, "
            "so the workers' own polls go on"
        ) from None
    except POLL_ERRORS as exc:
        advice = f"; {provider_advice(exc, settings)}" if isinstance(exc, ProviderError) else ""
        raise fail(f"the poll could not finish: {one_line(exc)}{advice}") from None
    finally:
        providers.close()
    if output is OutputFormat.json:
        sys.stdout.write(json.dumps(result) + "\n")
        return
    table = Table("API", "what", "seen", "new items", "invalid")
    for family, polled in result["families"].items():
        for name, counts in polled["steps"].items():
            table.add_row(
                family, name, str(counts["seen"]), str(counts["new"]), str(counts["invalid"])
            )
    console.print(table)
    where = "here" if not settings.broker_url else "by the workers"
    items = "item" if result["new"] == 1 else "items"
    console.print(f"{result['new']} new {items}, processed {where}")
    if result["settled"]:
        console.print(
            f"{result['settled']} notified Pix and refunds settled by being listed "
            "(confirmed, or found to disagree), with no look-up each"
        )
