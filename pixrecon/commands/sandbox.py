"""``pixrecon sandbox``: the simulated provider in the foreground, optionally playing a
scripted business day against the receiver first."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from pixrecon.commands.common import console, err, fail
from reconcile.settings import get_settings


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
    """Run the simulated provider (OAuth, QR code API, accounts API) in the foreground.

    With --scenario, play that day against the webhook URLs once the sandbox is up, print
    what really happened (the ground truth), then keep serving so pixrecon can poll it."""
    from sandbox.cli import run_sandbox

    if scenario is None:
        run_sandbox(host=host, port=port)
        return
    import datetime as dt

    from sandbox.cli import run_scenario_sandbox
    from sandbox.scenario import ScenarioError, load_scenario

    try:
        day = dt.date.fromisoformat(date) if date is not None else None
    except ValueError:
        raise fail(f"--date must be YYYY-MM-DD, got {escape(date or '')!r}") from None
    try:
        loaded = load_scenario(scenario)
    except ScenarioError as exc:
        raise fail(escape(str(exc))) from None
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
        raise fail(escape(str(exc))) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
