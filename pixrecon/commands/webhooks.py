"""``pixrecon webhooks register``: point the provider's notifications at this receiver."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from functools import partial
from typing import Annotated
from urllib.parse import SplitResult, urlsplit, urlunsplit

import typer
from rich.markup import escape
from rich.table import Table

from pixrecon.commands.common import (
    FormatOption,
    OutputFormat,
    console,
    fail,
    one_line,
    provider_advice,
    say,
)
from reconcile.provider import factory
from reconcile.provider.errors import ProviderError
from reconcile.settings import get_settings

ACCOUNTS_TYPES = ("TRANSFER", "RECEIVE", "REFUND", "CASHOUT", "INFRACTION")

webhooks_app = typer.Typer(help="Webhook registration with the provider.", no_args_is_help=True)


# A path naming the receiver's own routes: the command adds them, so a base URL ending in
# one would register `/webhooks/qrcode/webhooks/qrcode`, which the receiver answers 404.
_OWN_ROUTES = re.compile(r"(?P<base>.*?)/+webhooks(?:/+(?:qrcode|accounts)(?:/+[^/]*)?)?/*")


def _base_url_or_exit(base_url: str) -> SplitResult:
    """``base_url`` split, when the routes appended to it are the receiver's; else one line
    and exit 2 — the provider would post every notification to a URL answered 404."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise fail(
            "--base-url must be the absolute URL where the provider reaches this receiver, "
            f"such as https://pix.example.com; got {escape(repr(base_url))}"
        )
    # Checked on the text, not the split parts: a bare `?` or `#` is dropped by urlsplit,
    # yet appending the routes after it would still put them outside the path.
    if "?" in base_url or "#" in base_url:
        what = "a query (?…)" if "?" in base_url.split("#", 1)[0] else "a fragment (#…)"
        raise fail(
            f"--base-url {escape(base_url)} has {what}: the routes are appended to it, so it "
            "must end with its path, such as https://pix.example.com or "
            "https://pix.example.com/prefix"
        )
    own = _OWN_ROUTES.fullmatch(parts.path)
    if own is not None:
        given = urlunsplit((parts.scheme, parts.netloc, own["base"], "", ""))
        raise fail(
            f"--base-url {escape(base_url)} already names the receiver's routes: give the "
            f"address they live under, {escape(given)}; the command appends /webhooks/qrcode "
            "and /webhooks/accounts itself"
        )
    return parts


@webhooks_app.command("register")
def register(
    base_url: Annotated[
        str,
        typer.Option(
            "--base-url",
            help="public https:// URL where this receiver is reached, such as "
            "https://pix.example.com (or …/prefix): /webhooks/qrcode and /webhooks/accounts "
            "are appended to it, so one with a query, a fragment or a /webhooks path is refused",
        ),
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
    output: FormatOption = OutputFormat.table,
) -> None:
    """Register /webhooks/qrcode (Pix, rec, cobr) and /webhooks/accounts with the provider.

    The accounts registrations carry the webhook secret header (the first value of
    PIXRECON_WEBHOOK_SECRETS), so that notifications authenticate. Exit code 2 when any
    registration failed (each is listed with its result).
    """
    parts = _base_url_or_exit(base_url)
    settings = get_settings()
    base = base_url.rstrip("/")
    done: list[dict[str, str]] = []
    failures: list[ProviderError] = []

    def attempt(api: str, what: str, url: str, call: Callable[[], object]) -> None:
        try:
            call()
        except ProviderError as exc:
            failures.append(exc)
            done.append({"api": api, "registration": what, "url": url, "result": f"failed: {exc}"})
        else:
            done.append({"api": api, "registration": what, "url": url, "result": "registered"})

    # Every precondition first: a registration half done is worse than none.
    if not (chave or automatico or accounts):
        raise fail(
            "nothing to register: give --chave YOUR-PIX-KEY, or leave out --no-automatico "
            "or --no-accounts"
        )
    qrcode = factory.qrcode_api(settings)
    if (chave or automatico) and qrcode is None:
        raise fail(
            "the QR code API is not configured: set PIXRECON_QRCODE_API_URL, "
            "PIXRECON_QRCODE_CLIENT_ID and PIXRECON_QRCODE_CLIENT_SECRET, or give "
            "--no-automatico and no --chave"
        )
    api = factory.accounts_api(settings) if accounts else None
    if accounts and api is None:
        raise fail(
            "the accounts API is not configured: set PIXRECON_ACCOUNTS_API_URL, "
            "PIXRECON_ACCOUNTS_CLIENT_ID, PIXRECON_ACCOUNTS_CLIENT_SECRET and "
            "PIXRECON_ACCOUNTS_ACCOUNT_ID, or give --no-accounts"
        )
    if accounts and not settings.webhook_secrets:
        raise fail(
            "PIXRECON_WEBHOOK_SECRETS is empty: accounts notifications could not authenticate"
        )
    # Allowed (a sandbox, a test on this host), but said: neither is what a merchant means.
    if parts.scheme == "http" and parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        say(
            f"--base-url {escape(base_url)} is plain HTTP: providers deliver Pix callbacks "
            "over HTTPS (mutual TLS) only",
            "warning",
        )
    if qrcode is not None and not chave:
        say(
            "no --chave: no Pix webhook is registered, so Pix received reach pixrecon by "
            "polling only (give --chave YOUR-PIX-KEY, once per key)",
            "warning",
        )
    qrcode_url = f"{base}/webhooks/qrcode"
    if qrcode is not None and (chave or automatico):
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
    if api is not None:
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
        for column in table.columns:
            # A URL cut short is one nobody can check against what they meant to register.
            column.overflow = "fold"
        for row in done:
            table.add_row(
                row["api"], escape(row["registration"]), escape(row["url"]), escape(row["result"])
            )
        console.print(table)
    if failures:
        # The table says which; this line says what to do, as every failure does.
        raise fail(
            f"{len(failures)} of {len(done)} registrations failed ({one_line(failures[0])}): "
            f"{provider_advice(failures[0], settings)}"
        )
    raise typer.Exit(0)
