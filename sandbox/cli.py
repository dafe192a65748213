"""Run the sandbox in the foreground: ``python -m sandbox`` (later ``pixrecon sandbox``)."""

from __future__ import annotations

import argparse
import contextlib
import random
import sys
import time
from collections.abc import Callable, Sequence
from datetime import date, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

import uvicorn

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
    on ``accounts_port`` (``None``: not at all), over the same provider state.
    ``on_ready(qrcode_api_url, accounts_api_url)`` runs once both are accepting connections
    (a scenario plays its day then); the sandbox keeps serving after it returns.
    """
    if provider is None:
        provider = SandboxProvider(token_lifetime_seconds=token_lifetime_seconds, seed=seed)
        seed_demo_pix(provider, demo_pix, seed=seed or 0)
    print(
        f"sandbox Pix provider on http://{host}:{port}\n"
        f"  token URL     http://{host}:{port}/oauth/token\n"
        f"  client id     {DEFAULT_CLIENT_ID}\n"
        f"  client secret {DEFAULT_CLIENT_SECRET}\n"
        f"  scopes        {' '.join(sorted(DEFAULT_SCOPES))}",
        file=sys.stderr,
    )
    accounts = None
    if accounts_port is not None:
        accounts = BackgroundServer(
            create_accounts_app(provider), host=host, port=accounts_port, log_level=log_level
        ).start()
        print(
            f"sandbox accounts API on {accounts.url}\n"
            f"  token URL     {accounts.url}/oauth/token\n"
            f"  client id     {DEFAULT_ACCOUNTS_CLIENT_ID}\n"
            f"  client secret {DEFAULT_ACCOUNTS_CLIENT_SECRET}\n"
            f"  x-account-id  {DEFAULT_ACCOUNT_ID}",
            file=sys.stderr,
        )
    try:
        if on_ready is None:
            uvicorn.run(create_app(provider), host=host, port=port, log_level=log_level)
        else:
            _serve_then(provider, host, port, log_level, accounts, on_ready)
    finally:
        if accounts is not None:
            accounts.stop()


def _serve_then(
    provider: SandboxProvider,
    host: str,
    port: int,
    log_level: str,
    accounts: BackgroundServer | None,
    on_ready: Callable[[str, str | None], None],
) -> None:
    # In a thread, unlike uvicorn.run, the server is known to be up before on_ready runs;
    # the main thread then only waits, so Ctrl-C arrives here as KeyboardInterrupt.
    with BackgroundServer(create_app(provider), host=host, port=port, log_level=log_level) as api:
        on_ready(api.url, accounts.url if accounts is not None else None)
        print("serving the sandbox until interrupted (Ctrl-C)", file=sys.stderr)
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
) -> None:
    """Serve the sandbox, play ``scenario`` against the webhook URLs once it is up, print
    the ground truth, and keep serving (so the receiver can poll) until interrupted."""
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
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument(
        "--token-lifetime", type=float, default=DEFAULT_TOKEN_LIFETIME_SECONDS, metavar="SECONDS"
    )
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--demo-pix", type=int, default=0, metavar="N", help="pre-book N Pix")
    parser.add_argument("--log-level", default="info")
    parser.add_argument("--accounts-port", type=int, default=DEFAULT_ACCOUNTS_PORT)
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
