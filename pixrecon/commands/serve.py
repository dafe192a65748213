"""``pixrecon serve`` (the receiver, with in-process workers in single-node mode) and
``pixrecon worker`` (Dramatiq worker processes, production mode)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from pixrecon.bootstrap import setup_logging
from pixrecon.commands.common import (
    PortOption,
    broker_or_exit,
    database_or_exit,
    fail,
    listen_or_exit,
    log,
    own_metrics_or_exit,
    say,
)
from reconcile.heap import freeze_startup_objects
from reconcile.provider.factory import provider_clients
from reconcile.settings import Settings, get_settings

if TYPE_CHECKING:
    import uvicorn


def warn_about_confirmation(settings: Settings) -> None:
    if not settings.confirmation_ok:
        say(f"confirmation by the provider's API is {settings.confirmation}", "warning")


def _warn_about_a_start(settings: Settings) -> None:
    from receiver.auth import auth_is_configured

    if not auth_is_configured(settings):  # refused at start unless PIXRECON_INSECURE_NO_AUTH
        say(
            "webhook authentication is OFF (PIXRECON_INSECURE_NO_AUTH=1); anyone who can "
            "reach this port can inject notifications. Never run like this in production.",
            "warning",
        )
    warn_about_confirmation(settings)


def _server(config: uvicorn.Config) -> uvicorn.Server:
    """A ``uvicorn.Server`` that ends normally after the graceful shutdown a signal asked for.

    uvicorn raises the signal again once it has shut down, so that a program embedding it
    dies of it: here Ctrl-C would read as an interruption (exit 130, "stopped before it
    finished") and SIGTERM as a kill, although both are how a receiver is stopped and
    every delivery in flight was answered. The worker and the sandbox exit 0 the same way.
    """
    import uvicorn

    class StoppedBySignal(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            handled = (signal.SIGINT, signal.SIGTERM)
            original = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
            try:
                yield
            finally:
                for sig, handler in original.items():
                    signal.signal(sig, handler)

    return StoppedBySignal(config)


class _DroppedAtShutdown(logging.Filter):
    """uvicorn cancels the requests still in flight when the graceful shutdown runs out
    (PIXRECON_SHUTDOWN_TIMEOUT_SECONDS) and logs each with its stack, as if a bug: it is
    how the shutdown was asked to end, said here in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, asyncio.CancelledError):
            record.msg = (
                "request_dropped_at_shutdown: a request still in flight when "
                "PIXRECON_SHUTDOWN_TIMEOUT_SECONDS ran out was closed unanswered (a "
                "delivery among them was not acknowledged, and the provider sends it again)"
            )
            record.args = ()
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def serve(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: PortOption = 8000,
) -> None:
    """Run the webhook receiver. Without PIXRECON_BROKER_URL the workers run in-process.

    TLS (and mutual TLS) is terminated here when PIXRECON_TLS_CERTFILE/KEYFILE are set.

    SIGTERM or Ctrl-C stops it (exit code 0): the requests in flight get at most
    PIXRECON_SHUTDOWN_TIMEOUT_SECONDS (30 s) to finish; any still unanswered is closed."""
    import uvicorn
    from rich.markup import escape

    from receiver.auth import auth_is_configured, configuration_errors
    from receiver.tls import tls_options

    own_metrics_or_exit("serve")
    settings = get_settings()
    setup_logging(settings)
    # A half-configured defence is refused outright, even in insecure mode: the operator
    # believes it is on.
    problems = configuration_errors(settings)
    if problems:
        raise fail(f"webhook security is misconfigured: {escape('; '.join(problems))}")
    if settings.dashboard_users:
        from dashboard.passwords import HashFormatError, parse_users

        # Set but unreadable, the dashboard would only be off, told at INFO: the operator
        # means it to be on.
        try:
            parse_users(settings.dashboard_users)
        except HashFormatError as exc:
            raise fail(
                f"PIXRECON_DASHBOARD_USERS: {escape(str(exc))} (make each line with `pixrecon "
                "dashboard hash-password NAME`)"
            ) from None
    if not auth_is_configured(settings) and not settings.insecure_no_auth:
        raise fail(
            "no webhook authentication is configured: set PIXRECON_WEBHOOK_SECRETS, "
            "PIXRECON_ALLOW_IPS, PIXRECON_HMAC_SECRETS or mutual TLS (see "
            "docs/security.md), or PIXRECON_INSECURE_NO_AUTH=1 for local development only"
        )
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
                timeout_graceful_shutdown=settings.shutdown_timeout_seconds,
                **tls_options(settings),
            )
            server = _server(config)
            # Said once every check passed: a receiver that cannot start says only why.
            _warn_about_a_start(settings)
            freeze_startup_objects()
            # uvicorn says where it listens only for sockets it opened itself.
            scheme = "https" if config.is_ssl else "http"
            log.info("receiver_listening", url=f"{scheme}://{host}:{port}")
            dropped = _DroppedAtShutdown()
            uvicorn_log = logging.getLogger("uvicorn.error")
            uvicorn_log.addFilter(dropped)
            try:
                server.run(sockets=[sock])
            finally:
                uvicorn_log.removeFilter(dropped)
    if not server.started:
        raise fail("the receiver could not start: the log lines above say why")


def worker(
    processes: Annotated[int, typer.Option(min=1, help="worker processes")] = 1,
    threads: Annotated[int, typer.Option(min=1, help="threads per process")] = 8,
) -> None:
    """Run Dramatiq worker processes against PIXRECON_BROKER_URL (production mode).

    They serve their metrics on PIXRECON_WORKER_METRICS_HOST:PORT (127.0.0.1:9191;
    port 0: off)."""
    settings = get_settings()
    if not settings.broker_url:
        raise fail(
            "PIXRECON_BROKER_URL is not set; in single-node mode `pixrecon serve` runs the "
            "workers itself"
        )
    broker_or_exit(settings, reachable=True)
    # Built here once, so that a certificate file the worker processes could not load is
    # one line and exit 2 now, not a traceback in each of them.
    provider_clients(settings).close()
    database_or_exit(settings, auto_upgrade=False).dispose()
    metrics_env = _worker_metrics_environment(settings)
    # Said once every check passed: a worker that cannot start says only why.
    warn_about_confirmation(settings)
    # Logging is ours (one format, reconcile/logs.py), not Dramatiq's plain-text default.
    arguments = ["-m", "dramatiq", "worker.entry", "--skip-logging"]
    arguments += ["--processes", str(processes), "--threads", str(threads)]
    # A fresh interpreter, not Dramatiq's main() in this one: prometheus-client chooses
    # between per-process and shared-file counters when it is first imported, and this
    # process has imported it already. exec keeps the process id (systemd, signals).
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *arguments], {**os.environ, **metrics_env})  # noqa: S606 (our own interpreter, fixed arguments)


def _worker_metrics_environment(settings: Settings) -> dict[str, str]:
    """Check the metrics port is free (a clear error now rather than a worker tree that
    cannot serve its metrics) and prepare the shared-file directory."""
    from worker.metrics import MULTIPROC_ENV, multiprocess_environment

    port = settings.worker_metrics_port
    if port:
        listen_or_exit(
            settings.worker_metrics_host,
            port,
            remedy="set PIXRECON_WORKER_METRICS_PORT to another port (0 turns the worker "
            "metrics off)",
            host_option="PIXRECON_WORKER_METRICS_HOST",
        ).close()
    given = os.environ.get(MULTIPROC_ENV)
    where = Path(given) if given else _own_metrics_directory(port)
    if where.exists() and not where.is_dir():
        raise fail(
            f"{MULTIPROC_ENV} is {escape(str(where))}, which is not a folder: point it at a "
            "folder the worker may empty, or unset it"
        )
    return multiprocess_environment(where)


def _own_metrics_directory(port: int) -> Path:
    """One folder per user and metrics port, emptied at each start: the worker replaces
    itself with Dramatiq, so nothing is left to remove a folder of its own when it stops,
    and a new one per run piled up in the temporary folder."""
    where = Path(tempfile.gettempdir()) / f"pixrecon-worker-metrics-{os.getuid()}-{port}"
    with contextlib.suppress(FileExistsError):
        where.mkdir(mode=0o700)
    # In a folder every user may write to: only a folder of this user's, not a link
    # someone else planted, may hold the metrics.
    if where.is_symlink() or not where.is_dir() or where.stat().st_uid != os.getuid():
        raise fail(
            f"{escape(str(where))} is not a folder of this user's: remove it, or set "
            "PROMETHEUS_MULTIPROC_DIR to a folder for the worker's metrics"
        )
    return where
