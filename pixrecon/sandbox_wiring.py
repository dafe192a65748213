"""Running the simulated provider beside pixrecon: both API families on loopback, and the
settings that point pixrecon at them (the demo, and tests, use exactly this)."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from pydantic import AliasChoices

from reconcile.settings import Settings
from sandbox.accounts.app import create_accounts_app
from sandbox.accounts.defaults import (
    DEFAULT_ACCOUNT_ID,
    DEFAULT_ACCOUNTS_CLIENT_ID,
    DEFAULT_ACCOUNTS_CLIENT_SECRET,
)
from sandbox.app import create_app
from sandbox.defaults import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider

DEFAULT_SECRET_HEADER = str(Settings.model_fields["webhook_secret_header"].default)


@dataclass(frozen=True)
class SandboxUrls:
    qrcode: str
    accounts: str

    def configure(self, settings: Settings) -> Settings:
        """``settings``, pointed at the sandbox's two APIs with its demo credentials."""
        return settings.model_copy(update=self.fields())

    def fields(self) -> dict[str, str]:
        return {
            "qrcode_api_url": self.qrcode,
            "qrcode_client_id": DEFAULT_CLIENT_ID,
            "qrcode_client_secret": DEFAULT_CLIENT_SECRET,
            "accounts_api_url": self.accounts,
            "accounts_client_id": DEFAULT_ACCOUNTS_CLIENT_ID,
            "accounts_client_secret": DEFAULT_ACCOUNTS_CLIENT_SECRET,
            "accounts_account_id": DEFAULT_ACCOUNT_ID,
        }


def setting_variable(name: str) -> str:
    """The environment variable (and ``.env`` key) pixrecon reads setting ``name`` from:
    ``PIXRECON_`` + its name, or the first of its aliases when it has several."""
    alias = Settings.model_fields[name].validation_alias
    if isinstance(alias, AliasChoices):
        return str(alias.choices[0])
    if isinstance(alias, str):
        return alias
    return "PIXRECON_" + name.upper()


def sandbox_settings(
    urls: SandboxUrls, *, secret_header: str | None = None, secret: str | None = None
) -> dict[str, str]:
    """The ``PIXRECON_*`` variables that point pixrecon at the sandbox: its two APIs with
    the credentials it accepts and, when it sends one, the webhook secret (and header)."""
    values = urls.fields()
    if secret is not None:
        values["webhook_secret_header"] = secret_header or DEFAULT_SECRET_HEADER
        values["webhook_secrets"] = secret
    return {setting_variable(name): value for name, value in values.items()}


def env_lines(variables: dict[str, str]) -> list[str]:
    """``NAME=value`` lines that a ``.env`` file and a POSIX shell both read back as is.

    Single quotes are the one quoting both read alike, and only for values without a
    quote or a backslash: those are refused (``ValueError``)."""
    lines = []
    for name, value in variables.items():
        if "'" in value or "\\" in value:
            raise ValueError(f"{name}: a value with a quote or a backslash cannot be written")
        quoted = value if shlex.quote(value) == value else f"'{value}'"
        lines.append(f"{name}={quoted}")
    return lines


@contextmanager
def sandbox_servers(provider: SandboxProvider) -> Iterator[SandboxUrls]:
    with (
        BackgroundServer(create_app(provider)) as qrcode,
        BackgroundServer(create_accounts_app(provider)) as accounts,
    ):
        yield SandboxUrls(qrcode.url, accounts.url)
