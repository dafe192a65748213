"""``pixrecon sandbox``: the simulated provider in the foreground, optionally playing a
scripted business day against the receiver first, and the settings that point pixrecon
at it."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

import typer
from rich.markup import escape

from pixrecon.commands.common import (
    Interrupted,
    console,
    day_option,
    fail,
    listen_or_exit,
    say,
    writable_or_exit,
)
from pixrecon.sandbox_wiring import SandboxUrls, env_lines, sandbox_settings
from reconcile.settings import get_settings

SETTINGS_HEADER = "# pixrecon settings for this sandbox (paste into .env, or export them)"


def _write_atomically(path: Path, text: str) -> None:
    # Whole or absent: a script waiting for the file never reads half of it.
    directory = path.parent if str(path.parent) else Path()
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def sandbox(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="port of the QR code API (0: a free one)")
    ] = 8900,
    accounts_port: Annotated[
        int, typer.Option(min=0, max=65535, help="port of the accounts API (0: a free one)")
    ] = 8002,
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
    env_file: Annotated[
        Path | None,
        typer.Option(
            metavar="PATH",
            help="also write the printed settings to this file (replaced), once the APIs "
            "are up and the scenario's day is played",
        ),
    ] = None,
) -> None:
    """Run the simulated provider (OAuth, QR code API, accounts API) in the foreground.

    With --scenario, play that day against the webhook URLs once the sandbox is up and
    print what really happened (the ground truth). Then print the PIXRECON_* settings that
    point pixrecon at this sandbox, and keep serving so pixrecon can poll it."""
    from sandbox.cli import run_sandbox, run_scenario_sandbox
    from sandbox.scenario import ScenarioError, load_scenario

    settings = get_settings()
    header = webhook_secret_header or settings.webhook_secret_header
    secret = webhook_secret or next(iter(settings.webhook_secrets), None)
    if scenario is None:
        # Nothing is notified without a scenario: there is no secret to tell.
        secret = None
    elif secret is None:
        say(
            "no webhook secret (--webhook-secret or PIXRECON_WEBHOOK_SECRETS): "
            "notifications are sent without a secret header",
            level="warning",
        )
    if secret is not None and "," in secret:
        raise fail("a webhook secret cannot contain a comma (PIXRECON_WEBHOOK_SECRETS is a list)")
    try:
        env_lines(sandbox_settings(SandboxUrls("", ""), secret_header=header, secret=secret))
    except ValueError as exc:
        raise fail(f"the webhook secret cannot be a setting: {escape(str(exc))}") from None

    def announce(qrcode_url: str, accounts_url: str | None) -> None:
        urls = SandboxUrls(qrcode_url, accounts_url or "")
        variables = sandbox_settings(urls, secret_header=header, secret=secret)
        if accounts_url is None:
            variables = {k: v for k, v in variables.items() if "_ACCOUNTS_" not in k}
        text = "\n".join([SETTINGS_HEADER, *env_lines(variables)]) + "\n"
        # Plain text, flushed at once: a rich console would wrap long lines, and whoever
        # reads this from a pipe is waiting for it while the sandbox keeps running.
        sys.stdout.write(text)
        sys.stdout.flush()
        if env_file is not None:
            _write_atomically(env_file, text)

    day = day_option(date) if date is not None else None
    if scenario is not None:
        _webhook_url_or_exit("qrcode", qrcode_webhook_url)
        _webhook_url_or_exit("accounts", accounts_webhook_url)
    if env_file is not None:
        writable_or_exit(env_file)
    _ports_free_or_exit(host, port, accounts_port)
    try:
        loaded = load_scenario(scenario) if scenario is not None else None
    except ScenarioError as exc:
        raise fail(escape(str(exc))) from None

    try:
        if loaded is None:
            run_sandbox(host=host, port=port, accounts_port=accounts_port, on_ready=announce)
        else:
            run_scenario_sandbox(
                loaded,
                qrcode_webhook_url=qrcode_webhook_url,
                accounts_webhook_url=accounts_webhook_url,
                secret_header=header if secret is not None else None,
                secret=secret,
                day=day,
                host=host,
                port=port,
                accounts_port=accounts_port,
                console=console,
                on_played=announce,
            )
    except ScenarioError as exc:
        raise fail(escape(str(exc))) from None
    except (OSError, RuntimeError) as exc:
        # A port already taken, an address not ours: one line, exit 2.
        raise fail(f"the sandbox could not start: {escape(str(exc))}") from None
    except KeyboardInterrupt:
        raise Interrupted(
            "the sandbox stopped before it was up"
            + (" and its scenario played" if scenario is not None else "")
        ) from None


def _webhook_url_or_exit(api: str, url: str) -> None:
    """A URL the scenario's notifications can be posted to; else one line and exit 2,
    before the sandbox starts: every delivery would fail, and the day would be played to
    nobody."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise fail(
            f"--{api}-webhook-url must be the absolute URL where the receiver takes the "
            f"scenario's notifications, such as http://127.0.0.1:8000/webhooks/{api}; got "
            f"{escape(repr(url))}"
        )


def _ports_free_or_exit(host: str, port: int, accounts_port: int) -> None:
    """Each API's port, tried before anything starts: a port in use is named with the
    option that chose it, rather than found by the server after its start-up lines."""
    if port and port == accounts_port:
        raise fail(f"--port and --accounts-port are both {port}: each API needs a port of its own")
    for number, option in ((port, "--port"), (accounts_port, "--accounts-port")):
        if number:
            listen_or_exit(host, number, remedy=f"choose another {option}").close()
