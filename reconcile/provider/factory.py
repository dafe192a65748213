"""Provider clients built from settings, each API family with its own mutual-TLS
identity."""

from __future__ import annotations

import ssl

import httpx

from reconcile.provider.accounts_api import AccountsApi
from reconcile.provider.pix_api import PixApi
from reconcile.settings import Settings


def _http(cert: str | None, key: str | None, ca: str | None) -> httpx.Client:
    # An SSL context carries both the CA and the client certificate (httpx's `cert=` is
    # deprecated).
    context = ssl.create_default_context(cafile=ca) if ca else ssl.create_default_context()
    if cert:
        context.load_cert_chain(cert, key)
    return httpx.Client(verify=context, timeout=10.0)


def pix_api(settings: Settings) -> PixApi | None:
    """``None`` when the Pix API is not configured (its jobs are then skipped)."""
    if not (settings.pix_api_url and settings.pix_client_id and settings.pix_client_secret):
        return None
    return PixApi(
        settings.pix_api_url,
        settings.pix_client_id,
        settings.pix_client_secret,
        http_client=_http(
            settings.pix_client_cert, settings.pix_client_key, settings.pix_ca_bundle
        ),
    )


def accounts_api(settings: Settings) -> AccountsApi | None:
    """``None`` when the accounts API is not configured (its jobs are then skipped)."""
    s = settings
    if not (
        s.accounts_api_url
        and s.accounts_client_id
        and s.accounts_client_secret
        and s.accounts_account_id
    ):
        return None
    return AccountsApi(
        s.accounts_api_url,
        s.accounts_client_id,
        s.accounts_client_secret,
        s.accounts_account_id,
        http_client=_http(s.accounts_client_cert, s.accounts_client_key, s.accounts_ca_bundle),
    )
