"""``pixrecon demo``: a merchant's whole business day, end to end, with no services needed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from pixrecon.commands.common import Interrupted, console, day_option, fail, own_metrics_or_exit


def demo(
    scenario: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="play this scenario file (docs/scenarios.md) instead of the shipped business day",
        ),
    ] = None,
    date: Annotated[
        str | None,
        typer.Option(
            help="the business day to play, YYYY-MM-DD, before today "
            "(default: the scenario's own date, else yesterday)"
        ),
    ] = None,
    seed: Annotated[
        int | None, typer.Option(help="random seed of the day's ids and delivery order")
    ] = None,
    serve: Annotated[
        bool,
        typer.Option(
            "--serve",
            help="afterwards keep the receiver and the dashboard running, print the "
            "dashboard's URL and a login, and stop on Ctrl-C",
        ),
    ] = False,
    host: Annotated[str, typer.Option(help="with --serve: address to listen on")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="with --serve: port to listen on (0: a free one)")
    ] = 8000,
    database_url: Annotated[
        str,
        typer.Option(
            help="database for the demo: a SQLite file is recreated; a PostgreSQL one must "
            "be empty and migrated (PIXRECON_DATABASE_URL=… pixrecon db upgrade)"
        ),
    ] = "sqlite:///pixrecon-demo.db",
) -> None:
    """Play a merchant's whole business day through the sandbox and reconcile it.

    The sandbox plays the day (Pix, charges, invoices, refunds, payouts, MED, Pix
    Automático, fees, forged notifications, delivery and API faults) against a receiver
    with in-process workers on SQLite; the day is fetched and reconciled as `pixrecon
    reconcile` does, and every figure is checked against the sandbox's ground truth.
    Exit code 0 when all agree, 1 when one does not, 2 when the demo cannot run as asked."""
    from pixrecon.demo import DemoError, DemoOptions, run_demo

    own_metrics_or_exit("demo")
    day = day_option(date) if date is not None else None
    options = DemoOptions(
        scenario=scenario,
        day=day,
        seed=seed,
        database_url=database_url,
        serve=serve,
        host=host,
        port=port,
    )
    try:
        code = run_demo(options, console)
    except DemoError as exc:
        raise fail(escape(str(exc))) from None
    except KeyboardInterrupt:
        raise Interrupted(
            "the demo stopped before it finished: its figures were not all checked"
        ) from None
    raise typer.Exit(code)
