"""Running the simulated provider beside pixrecon: both API families on loopback, and the
settings that point pixrecon at them (the demo, and tests, use exactly this)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

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


@contextmanager
def sandbox_servers(provider: SandboxProvider) -> Iterator[SandboxUrls]:
    with (
        BackgroundServer(create_app(provider)) as qrcode,
        BackgroundServer(create_accounts_app(provider)) as accounts,
    ):
        yield SandboxUrls(qrcode.url, accounts.url)
