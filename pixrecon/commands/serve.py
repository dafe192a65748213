"""``pixrecon serve`` (the receiver, with in-process workers in single-node mode) and
``pixrecon worker`` (Dramatiq worker processes, production mode)."""

from __future__ import annotations

from typing import Annotated

import typer

from pixrecon.bootstrap import setup_logging
from pixrecon.commands.common import (
    PortOption,
    broker_or_exit,
    database_or_exit,
    fail,
    listen_or_exit,
    log,
    say,
)
from reconcile.settings import Settings, get_settings


def warn_about_confirmation(settings: Settings) -> None:
    if not settings.confirmation_ok:
        say(f"confirmation by the provider's API is {settings.confirmation}", "warning")


def serve(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: PortOption = 8000,
) -> None:
    """Run the webhook receiver. Without PIXRECON_BROKER_URL the workers run in-process.

    TLS (and mutual TLS) is terminated here when PIXRECON_TLS_CERTFILE/KEYFILE are set."""
    import uvicorn
    from rich.markup import escape

    from receiver.auth import auth_is_configured, configuration_errors
    from receiver.tls import tls_options

    settings = get_settings()
    setup_logging(settings)
    # A half-configured defence is refused outright, even in insecure mode: the operator
    # believes it is on.
    problems = configuration_errors(settings)
    if problems:
        raise fail(f"webhook security is misconfigured: {escape('; '.join(problems))}")
    if not auth_is_configured(settings):
        if not settings.insecure_no_auth:
            raise fail(
                "no webhook authentication is configured: set PIXRECON_WEBHOOK_SECRETS, "
                "PIXRECON_ALLOW_IPS, PIXRECON_HMAC_SECRETS or mutual TLS (see "
                "docs/security.md), or PIXRECON_INSECURE_NO_AUTH=1 for local development only"
            )
        say(
            "webhook authentication is OFF (PIXRECON_INSECURE_NO_AUTH=1); anyone who can "
            "reach this port can inject notifications. Never run like this in production.",
            "warning",
        )
    warn_about_confirmation(settings)
    if settings.broker_url:
        broker_or_exit(settings, reachable=False)  # a dead Redis is waited out, a bad URL not
    sock = listen_or_exit(host, port)
    from pixrecon.node import Node  # the whole application: only once the checks passed

    with sock:
        engine = database_or_exit(settings, auto_upgrade=True)
        with Node(settings, engine) as node:
            config = uvicorn.Config(
                node.app,
                host=host,
                port=port,
                log_config=None,
                access_log=False,
                # The receiver resolves X-Forwarded-For itself, against
                # PIXRECON_TRUSTED_PROXIES; uvicorn's own rewriting would hand it a client
                # address it cannot re-check.
                proxy_headers=False,
                **tls_options(settings),
            )
            server = uvicorn.Server(config)
            # uvicorn says where it listens only for sockets it opened itself.
            scheme = "https" if config.is_ssl else "http"
            log.info("receiver_listening", url=f"{scheme}://{host}:{port}")
            server.run(sockets=[sock])
    if not server.started:
        raise fail("the receiver could not start: the log lines above say why")


def worker(
    processes: Annotated[int, typer.Option(min=1, help="worker processes")] = 1,
    threads: Annotated[int, typer.Option(min=1, help="threads per process")] = 8,
) -> None:
    """Run Dramatiq worker processes against PIXRECON_BROKER_URL (production mode)."""
    settings = get_settings()
    if not settings.broker_url:
        raise fail(
            "PIXRECON_BROKER_URL is not set; in single-node mode `pixrecon serve` runs the "
            "workers itself"
        )
    broker_or_exit(settings, reachable=True)
    warn_about_confirmation(settings)
    database_or_exit(settings, auto_upgrade=False).dispose()
    from dramatiq.cli import main as dramatiq_main
    from dramatiq.cli import make_argument_parser

    # Logging is ours (one format, reconcile/logs.py), not Dramatiq's plain-text default.
    arguments = ["worker.entry", "--skip-logging"]
    arguments += ["--processes", str(processes), "--threads", str(threads)]
    args = make_argument_parser().parse_args(arguments)  # type: ignore[no-untyped-call]
    code = dramatiq_main(args)  # type: ignore[no-untyped-call]
    if code:
        raise fail(f"the workers stopped on an error (Dramatiq's code {code}): see the log above")
