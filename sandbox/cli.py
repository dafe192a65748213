"""Run the sandbox in the foreground: ``python -m sandbox`` (or ``pixrecon sandbox``)."""

from __future__ import annotations

import argparse
import contextlib
import random
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from datetime import date, timedelta
from decimal import Decimal
from types import FrameType
from typing import TYPE_CHECKING

from sandbox.accounts.app import create_accounts_app
from sandbox.accounts.defaults import (
    DEFAULT_ACCOUNT_ID,
    DEFAULT_ACCOUNTS_CLIENT_ID,
    DEFAULT_ACCOUNTS_CLIENT_SECRET,
    DEFAULT_ACCOUNTS_PORT,
)
from sandbox.app import create_app
from sandbox.clock import utcnow
from sandbox.defaults import (
    DEFAULT_CLIENT_ID,
    DEFAULT_CLIENT_SECRET,
    DEFAULT_HOST,
    DEFAULT_PORT,
    DEFAULT_SCOPES,
    DEFAULT_TOKEN_LIFETIME_SECONDS,
)
from sandbox.ids import new_txid
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider

if TYPE_CHECKING:
    from rich.console import Console

    from sandbox.scenario import Scenario


def seed_demo_pix(provider: SandboxProvider, count: int, *, seed: int = 0) -> None:
    """Book ``count`` Pix spread over the last hour; about one in five has no txid."""
    rng = random.Random(seed)
    now = utcnow()
    for _ in range(count):
        provider.receive_pix(
            Decimal(rng.randint(100, 500_000)) / 100,
            txid=new_txid(rng) if rng.random() > 0.2 else None,
            horario=now - timedelta(seconds=rng.randint(0, 3600)),
        )


def run_sandbox(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    provider: SandboxProvider | None = None,
    token_lifetime_seconds: float = DEFAULT_TOKEN_LIFETIME_SECONDS,
    seed: int | None = None,
    demo_pix: int = 0,
    log_level: str = "info",
    accounts_port: int | None = DEFAULT_ACCOUNTS_PORT,
    on_ready: Callable[[str, str | None], None] | None = None,
) -> None:
    """Serve the sandbox until interrupted. A given ``provider`` wins over the options.

    The accounts (cash-out) API has its own base URL at the real provider, so it is served
    on ``accounts_port`` (``None``: not at all), over the same provider state. Port 0
    picks a free port, for either API. ``on_ready(qrcode_api_url, accounts_api_url)`` runs
    once both are accepting connections (a scenario plays its day then); the sandbox keeps
    serving after it returns.
    """
    if provider is None:
        provider = SandboxProvider(token_lifetime_seconds=token_lifetime_seconds, seed=seed)
        seed_demo_pix(provider, demo_pix, seed=seed or 0)
    accounts = None
    if accounts_port is not None:
        accounts = BackgroundServer(
            create_accounts_app(provider), host=host, port=accounts_port, log_level=log_level
        ).start()
    try:
        # In a thread, unlike uvicorn.run, the server is known to be up (and its port, when
        # the OS chose it) before on_ready runs; the main thread then only waits, so Ctrl-C
        # arrives here as KeyboardInterrupt.
        with BackgroundServer(
            create_app(provider), host=host, port=port, log_level=log_level
        ) as api:
            accounts_url = accounts.url if accounts is not None else None
            _describe(api.url, accounts_url)
            if on_ready is not None:
                on_ready(api.url, accounts_url)
            print("serving the sandbox until interrupted (Ctrl-C)", flush=True)
            wait_for_interrupt()
    finally:
        if accounts is not None:
            accounts.stop()


def _describe(api_url: str, accounts_url: str | None) -> None:
    print(
        f"sandbox Pix provider on {api_url}\n"
        f"  token URL     {api_url}/oauth/token\n"
        f"  client id     {DEFAULT_CLIENT_ID}\n"
        f"  client secret {DEFAULT_CLIENT_SECRET}\n"
        f"  scopes        {' '.join(sorted(DEFAULT_SCOPES))}",
    )
    if accounts_url is not None:
        print(
            f"sandbox accounts API on {accounts_url}\n"
            f"  token URL     {accounts_url}/oauth/token\n"
            f"  client id     {DEFAULT_ACCOUNTS_CLIENT_ID}\n"
            f"  client secret {DEFAULT_ACCOUNTS_CLIENT_SECRET}\n"
            f"  x-account-id  {DEFAULT_ACCOUNT_ID}",
        )
    # What the sandbox is, for a person: the command's own output, apart from its logs.
    sys.stdout.flush()


def wait_for_interrupt() -> None:
    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    # A service manager (or a test) stops the sandbox with SIGTERM: shut the servers
    # down as Ctrl-C does, rather than dying with connections open.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, stop)
    with contextlib.suppress(KeyboardInterrupt):
        while True:
            time.sleep(3600)


def run_scenario_sandbox(
    scenario: Scenario,
    *,
    qrcode_webhook_url: str,
    accounts_webhook_url: str,
    secret_header: str | None = None,
    secret: str | None = None,
    day: date | None = None,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    accounts_port: int = DEFAULT_ACCOUNTS_PORT,
    console: Console | None = None,
    on_played: Callable[[str, str], None] | None = None,
) -> None:
    """Serve the sandbox, play ``scenario`` against the webhook URLs once it is up, print
    the ground truth, and keep serving (so the receiver can poll) until interrupted.
    ``on_played(qrcode_api_url, accounts_api_url)`` runs once the day is played."""
    from rich.console import Console

    from sandbox.scenario import run_scenario, scenario_provider
    from sandbox.scenario.report import print_outcome

    out = console if console is not None else Console()
    provider = scenario_provider(scenario)

    def play(api_url: str, accounts_url: str | None) -> None:
        out.print(
            f"playing scenario {scenario.name!r}: notifications to {qrcode_webhook_url} "
            f"and {accounts_webhook_url}",
            markup=False,
        )
        outcome = run_scenario(
            scenario,
            provider,
            qrcode_webhook_url=qrcode_webhook_url,
            accounts_webhook_url=accounts_webhook_url,
            secret_header=secret_header,
            secret=secret,
            day=day,
        )
        print_outcome(out, outcome)
        if on_played is not None and accounts_url is not None:
            on_played(api_url, accounts_url)

    # Access logs would bury the summary; the receiver's own logs show its API calls.
    run_sandbox(
        host,
        port,
        provider=provider,
        log_level="warning",
        accounts_port=accounts_port,
        on_ready=play,
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m sandbox", description=__doc__)
    parser.add_argument("--host", default=DEFAULT_HOST)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="0: a free port")
    parser.add_argument(
        "--token-lifetime", type=float, default=DEFAULT_TOKEN_LIFETIME_SECONDS, metavar="SECONDS"
    )
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--demo-pix", type=int, default=0, metavar="N", help="pre-book N Pix")
    parser.add_argument("--log-level", default="info")
    parser.add_argument(
        "--accounts-port", type=int, default=DEFAULT_ACCOUNTS_PORT, help="0: a free port"
    )
    parser.add_argument(
        "--no-accounts", action="store_true", help="do not serve the accounts (cash-out) API"
    )
    args = parser.parse_args(argv)
    run_sandbox(
        args.host,
        args.port,
        token_lifetime_seconds=args.token_lifetime,
        seed=args.seed,
        demo_pix=args.demo_pix,
        log_level=args.log_level,
        accounts_port=None if args.no_accounts else args.accounts_port,
    )
