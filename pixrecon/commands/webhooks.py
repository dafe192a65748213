"""``pixrecon webhooks register``: point the provider's notifications at this receiver."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import partial
from typing import Annotated

import typer
from rich.table import Table

from pixrecon.commands.common import OutputFormat, console, fail
from reconcile.provider import factory
from reconcile.provider.errors import ProviderError
from reconcile.settings import get_settings

ACCOUNTS_TYPES = ("TRANSFER", "RECEIVE", "REFUND", "CASHOUT", "INFRACTION")

webhooks_app = typer.Typer(help="Webhook registration with the provider.", no_args_is_help=True)


@webhooks_app.command("register")
def register(
    base_url: Annotated[
        str, typer.Option("--base-url", help="public https:// URL where this receiver is reached")
    ],
    chave: Annotated[
        list[str] | None,
        typer.Option("--chave", help="Pix key whose Pix to notify (repeatable)"),
    ] = None,
    automatico: Annotated[
        bool, typer.Option(help="also register Pix Automático (recurrences, recurring charges)")
    ] = True,
    accounts: Annotated[
        bool, typer.Option(help="also register the accounts API notification types")
    ] = True,
    output: Annotated[
        OutputFormat, typer.Option("--format", "-f", help="table for people, json for programs")
    ] = OutputFormat.table,
) -> None:
    """Register /webhooks/qrcode (Pix, rec, cobr) and /webhooks/accounts with the provider.

    The accounts registrations carry the webhook secret header (the first value of
    PIXRECON_WEBHOOK_SECRETS), so that notifications authenticate. Exit code 2 when any
    registration failed (each is listed with its result).
    """
    settings = get_settings()
    base = base_url.rstrip("/")
    done: list[dict[str, str]] = []
    failures = 0

    def attempt(api: str, what: str, url: str, call: Callable[[], object]) -> None:
        nonlocal failures
        try:
            call()
        except ProviderError as exc:
            failures += 1
            done.append({"api": api, "registration": what, "url": url, "result": f"failed: {exc}"})
        else:
            done.append({"api": api, "registration": what, "url": url, "result": "registered"})

    qrcode = factory.qrcode_api(settings)
    qrcode_url = f"{base}/webhooks/qrcode"
    if chave or automatico:
        if qrcode is None:
            raise fail("the QR code API is not configured (PIXRECON_QRCODE_API_URL, …)")
        for key in chave or []:
            attempt(
                "qrcode",
                f"PUT /webhook/{key}",
                qrcode_url,
                partial(qrcode.register_webhook, key, qrcode_url),
            )
        if automatico:
            attempt(
                "qrcode",
                "PUT /webhookrec",
                qrcode_url,
                lambda: qrcode.register_webhook_rec(qrcode_url),
            )
            attempt(
                "qrcode",
                "PUT /webhookcobr",
                qrcode_url,
                lambda: qrcode.register_webhook_cobr(qrcode_url),
            )
    if accounts:
        api = factory.accounts_api(settings)
        if api is None:
            raise fail("the accounts API is not configured (PIXRECON_ACCOUNTS_API_URL, …)")
        if not settings.webhook_secrets:
            raise fail(
                "PIXRECON_WEBHOOK_SECRETS is empty: accounts notifications could not authenticate"
            )
        secret = settings.webhook_secrets[0]
        url = f"{base}/webhooks/accounts"
        for kind in ACCOUNTS_TYPES:
            attempt(
                "accounts",
                f"POST /webhooks/{kind}",
                url,
                partial(api.register_webhook, kind, url, settings.webhook_secret_header, secret),
            )
    if output is OutputFormat.json:
        sys.stdout.write(json.dumps(done, indent=2) + "\n")
    else:
        table = Table("api", "registration", "url", "result")
        for row in done:
            table.add_row(row["api"], row["registration"], row["url"], row["result"])
        console.print(table)
    raise typer.Exit(2 if failures else 0)
