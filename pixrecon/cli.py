"""``pixrecon`` — every subcommand of the console script."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from pixrecon.bootstrap import StartupError, open_database, setup_logging
from pixrecon.nightly_cli import exceptions_app, reconcile_command
from pixrecon.webhooks_cli import webhooks_app
from reconcile.settings import get_settings

app = typer.Typer(
    help="Pix webhook receiver and reconciliation worker.",
    no_args_is_help=True,
    add_completion=False,
)
db_app = typer.Typer(help="Database schema (Alembic migrations).", no_args_is_help=True)
events_app = typer.Typer(
    help="Inbox items (every notification and polled item). Without a subcommand: list them.",
    invoke_without_command=True,
)
app.add_typer(db_app, name="db")
app.add_typer(webhooks_app, name="webhooks")
app.add_typer(exceptions_app, name="exceptions")
app.command("reconcile")(reconcile_command)
app.add_typer(events_app, name="events")

console = Console()
err = Console(stderr=True)


class OutputFormat(StrEnum):
    table = "table"
    json = "json"


FormatOption = Annotated[
    OutputFormat, typer.Option("--format", "-f", help="table for people, json for programs")
]


def _fail(message: str, code: int = 2) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}")
    return typer.Exit(code)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on")] = 8000,
) -> None:
    """Run the webhook receiver. Without PIXRECON_BROKER_URL the workers run in-process.

    TLS (and mutual TLS) is terminated here when PIXRECON_TLS_CERTFILE/KEYFILE are set."""
    import uvicorn
    from rich.markup import escape

    from pixrecon.node import Node
    from receiver.auth import auth_is_configured, configuration_errors
    from receiver.tls import tls_options

    settings = get_settings()
    setup_logging(settings)
    # A half-configured defence is refused outright, even in insecure mode: the operator
    # believes it is on.
    problems = configuration_errors(settings)
    if problems:
        listed = "\n".join(f"  - {escape(problem)}" for problem in problems)
        raise _fail(f"webhook security is misconfigured:\n{listed}")
    if not auth_is_configured(settings):
        if not settings.insecure_no_auth:
            raise _fail(
                "no webhook authentication is configured: set PIXRECON_WEBHOOK_SECRETS, "
                "PIXRECON_ALLOW_IPS, PIXRECON_HMAC_SECRETS or mutual TLS (see "
                "docs/security.md), or PIXRECON_INSECURE_NO_AUTH=1 for local development only"
            )
        err.print(
            "[bold yellow]WARNING: webhook authentication is OFF "
            "(PIXRECON_INSECURE_NO_AUTH=1); anyone who can reach this port can inject "
            "notifications. Never run like this in production.[/]"
        )
    try:
        engine = open_database(settings, auto_upgrade=True)
    except StartupError as exc:
        raise _fail(str(exc)) from None
    with Node(settings, engine) as node:
        uvicorn.run(
            node.app,
            host=host,
            port=port,
            log_config=None,
            access_log=False,
            # The receiver resolves X-Forwarded-For itself, against PIXRECON_TRUSTED_PROXIES;
            # uvicorn's own rewriting would hand it a client address it cannot re-check.
            proxy_headers=False,
            **tls_options(settings),
        )


@app.command()
def worker(
    processes: Annotated[int, typer.Option(help="worker processes")] = 1,
    threads: Annotated[int, typer.Option(help="threads per process")] = 8,
) -> None:
    """Run Dramatiq worker processes against PIXRECON_BROKER_URL (production mode)."""
    settings = get_settings()
    if not settings.broker_url:
        raise _fail(
            "PIXRECON_BROKER_URL is not set; in single-node mode `pixrecon serve` runs the "
            "workers itself"
        )
    try:
        open_database(settings, auto_upgrade=False).dispose()
    except StartupError as exc:
        raise _fail(str(exc)) from None
    from dramatiq.cli import main as dramatiq_main
    from dramatiq.cli import make_argument_parser

    args = make_argument_parser().parse_args(  # type: ignore[no-untyped-call]
        ["worker.entry", "--processes", str(processes), "--threads", str(threads)]
    )
    raise typer.Exit(dramatiq_main(args))  # type: ignore[no-untyped-call]


@db_app.command("upgrade")
def db_upgrade(
    revision: Annotated[str, typer.Option(help="target revision")] = "head",
) -> None:
    """Apply the migrations to PIXRECON_DATABASE_URL."""
    from reconcile.db import create_db_engine
    from reconcile.migrate import current_revision, upgrade

    settings = get_settings()
    engine = create_db_engine(settings.database_url)
    upgrade(engine, revision)
    console.print(f"database at revision {current_revision(engine)}")


@events_app.callback()
def events(
    ctx: typer.Context,
    status: Annotated[str | None, typer.Option(help="pending, processed, failed, …")] = None,
    source: Annotated[str | None, typer.Option(help="webhook or poll")] = None,
    limit: Annotated[int, typer.Option(help="newest N items")] = 50,
    output: FormatOption = OutputFormat.table,
) -> None:
    """List inbox items, newest first."""
    if ctx.invoked_subcommand is not None:
        return
    from reconcile.db import session_scope
    from reconcile.queries import inbox_item_view, list_inbox

    settings = get_settings()
    try:
        engine = open_database(settings, auto_upgrade=False)
    except StartupError as exc:
        raise _fail(str(exc)) from None
    with session_scope(engine) as session:
        rows = [
            inbox_item_view(item)
            for item in list_inbox(session, status=status, source=source, limit=limit)
        ]
    if output is OutputFormat.json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    table = Table("id", "source", "kind", "key", "status", "dup", "received_at")
    for row in rows:
        table.add_row(
            str(row["id"]),
            row["source"],
            row["kind"],
            row["key"],
            row["status"],
            str(row["duplicates"]),
            row["received_at"],
        )
    console.print(table)


@events_app.command("show")
def events_show(
    item_id: Annotated[int, typer.Argument(help="inbox item id")],
) -> None:
    """Show one inbox item with its payload (JSON)."""
    from reconcile.db import session_scope
    from reconcile.models import InboxItem
    from reconcile.queries import inbox_item_view

    settings = get_settings()
    try:
        engine = open_database(settings, auto_upgrade=False)
    except StartupError as exc:
        raise _fail(str(exc)) from None
    with session_scope(engine) as session:
        item = session.get(InboxItem, item_id)
        if item is None:
            raise _fail(f"no inbox item {item_id}", code=1)
        view = inbox_item_view(item)
        view["payload"] = json.loads(item.payload)
    sys.stdout.write(json.dumps(view, indent=2, ensure_ascii=False) + "\n")


@app.command()
def poll(
    since: Annotated[
        str | None,
        typer.Option(help="start of an explicit window (RFC 3339); default: resume the poller"),
    ] = None,
    until: Annotated[str | None, typer.Option(help="end of the explicit window")] = None,
    output: FormatOption = OutputFormat.table,
) -> None:
    """Poll the provider's received-Pix list once; what no webhook brought enters the inbox."""
    from pixrecon.polling import poll_once

    settings = get_settings()
    setup_logging(settings)
    try:
        result = poll_once(settings, since=since, until=until, console=err)
    except StartupError as exc:
        raise _fail(str(exc)) from None
    if output is OutputFormat.json:
        sys.stdout.write(json.dumps(result) + "\n")
        return
    table = Table("window start", "window end", "Pix seen", "new items", "processed here")
    table.add_row(
        result["start"],
        result["end"],
        str(result["seen"]),
        str(result["new"]),
        str(result["processed"]),
    )
    console.print(table)


@events_app.command("replay")
def events_replay(
    item_id: Annotated[int, typer.Argument(help="inbox item id")],
) -> None:
    """Process an item again (failed, unsupported or ignored ones included); domain writes
    are keyed, so replaying a processed item changes nothing it already did."""
    from reconcile.db import session_scope
    from reconcile.inbox import replay
    from reconcile.processing import process_items

    settings = get_settings()
    try:
        engine = open_database(settings, auto_upgrade=False)
    except StartupError as exc:
        raise _fail(str(exc)) from None
    with session_scope(engine) as session:
        if replay(session, item_id) is None:
            raise _fail(f"no inbox item {item_id}", code=1)
    if settings.broker_url:
        from worker.runtime import build_runtime

        build_runtime(settings, engine).dispatcher.dispatch([item_id])
        console.print(f"item {item_id} is pending again and was sent to the workers")
        return
    report = process_items(engine, [item_id])
    outcome = "processed" if report.processed else "failed" if report.failed else "unsupported"
    console.print(f"item {item_id} replayed: {outcome}")


@events_app.command("ignore")
def events_ignore(
    item_id: Annotated[int, typer.Argument(help="inbox item id")],
    reason: Annotated[str, typer.Option(help="why it needs no processing")],
) -> None:
    """Mark an item as needing no processing, with the reason."""
    from reconcile.db import session_scope
    from reconcile.inbox import ignore

    try:
        engine = open_database(get_settings(), auto_upgrade=False)
    except StartupError as exc:
        raise _fail(str(exc)) from None
    with session_scope(engine) as session:
        if ignore(session, item_id, reason) is None:
            raise _fail(f"no inbox item {item_id}", code=1)
    console.print(f"item {item_id} ignored")


@app.command()
def sandbox(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on")] = 8900,
    scenario: Annotated[
        str | None,
        typer.Option(
            metavar="FILE",
            help="play this business day (docs/scenarios.md) once the sandbox is up",
        ),
    ] = None,
    qrcode_webhook_url: Annotated[
        str,
        typer.Option(help="where the scenario sends QR code notifications (+/pix, /rec, /cobr)"),
    ] = "http://127.0.0.1:8000/webhooks/qrcode",
    accounts_webhook_url: Annotated[
        str, typer.Option(help="where the scenario sends accounts notifications")
    ] = "http://127.0.0.1:8000/webhooks/accounts",
    webhook_secret_header: Annotated[
        str | None, typer.Option(help="default: PIXRECON_WEBHOOK_SECRET_HEADER")
    ] = None,
    webhook_secret: Annotated[
        str | None, typer.Option(help="default: the first of PIXRECON_WEBHOOK_SECRETS")
    ] = None,
    date: Annotated[
        str | None, typer.Option(help="play the scenario on this day (YYYY-MM-DD), not its own")
    ] = None,
) -> None:
    """Run the simulated provider (OAuth, Pix API, accounts API) in the foreground.

    With --scenario, play that day against the webhook URLs once the sandbox is up, print
    what really happened (the ground truth), then keep serving so pixrecon can poll it."""
    from sandbox.cli import run_sandbox

    if scenario is None:
        run_sandbox(host=host, port=port)
        return
    import datetime as dt

    from rich.markup import escape

    from sandbox.cli import run_scenario_sandbox
    from sandbox.scenario import ScenarioError, load_scenario

    try:
        day = dt.date.fromisoformat(date) if date is not None else None
    except ValueError:
        raise _fail(f"--date must be YYYY-MM-DD, got {escape(date or '')!r}") from None
    try:
        loaded = load_scenario(scenario)
    except ScenarioError as exc:
        raise _fail(escape(str(exc))) from None
    settings = get_settings()
    header = webhook_secret_header or settings.webhook_secret_header
    secret = webhook_secret or next(iter(settings.webhook_secrets), None)
    if secret is None:
        err.print(
            "[yellow]no webhook secret (--webhook-secret or PIXRECON_WEBHOOK_SECRETS): "
            "notifications are sent without a secret header[/]"
        )
    try:
        run_scenario_sandbox(
            loaded,
            qrcode_webhook_url=qrcode_webhook_url,
            accounts_webhook_url=accounts_webhook_url,
            secret_header=header if secret is not None else None,
            secret=secret,
            day=day,
            host=host,
            port=port,
            console=console,
        )
    except ScenarioError as exc:
        raise _fail(escape(str(exc))) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


@app.command()
def demo(
    pix: Annotated[int, typer.Option(help="how many Pix the sandbox receives")] = 300,
    seed: Annotated[int, typer.Option(help="random seed of the fault plan")] = 7,
    database_url: Annotated[
        str, typer.Option(help="database for the demo (recreated when it is a SQLite file)")
    ] = "sqlite:///pixrecon-demo.db",
) -> None:
    """Run the whole path once against the sandbox, with no services needed."""
    from pixrecon.demo import run_demo

    raise typer.Exit(run_demo(pix_count=pix, seed=seed, database_url=database_url, console=console))


def main() -> None:
    app()
