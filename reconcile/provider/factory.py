"""Provider clients built from settings, each API family with its own mutual-TLS
identity."""

from __future__ import annotations

import ssl
from dataclasses import dataclass

import httpx

from reconcile.provider.accounts_api import AccountsApi
from reconcile.provider.qrcode_api import QrCodeApi
from reconcile.provider.retry import RetryPolicy
from reconcile.settings import Settings


class ProviderTlsError(ValueError):
    """A certificate, key or CA bundle file a setting names cannot be used; the message
    names the setting, the file and what to do."""


def _why(exc: Exception) -> str:
    if isinstance(exc, FileNotFoundError):
        return "no such file"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, IsADirectoryError):
        return "it is a folder"
    reason = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or str(exc)
    return f"not a usable PEM file ({reason})"


def _http(family: str, cert: str | None, key: str | None, ca: str | None) -> httpx.Client:
    """``family``: ``QRCODE`` or ``ACCOUNTS``, for the settings' names in errors."""
    # An SSL context carries both the CA and the client certificate (httpx's `cert=` is
    # deprecated).
    try:
        context = ssl.create_default_context(cafile=ca) if ca else ssl.create_default_context()
    except (OSError, ssl.SSLError) as exc:
        raise ProviderTlsError(
            f"PIXRECON_{family}_CA_BUNDLE={ca}: {_why(exc)}: name a readable PEM file of the "
            "provider's CA certificates, or unset it to trust the system's"
        ) from None
    if key and not cert:
        # Without its certificate the key would be left unused, and every call would go
        # without the client certificate the provider asks for.
        raise ProviderTlsError(
            f"PIXRECON_{family}_CLIENT_KEY is set, but PIXRECON_{family}_CLIENT_CERT is not: "
            "the provider's mutual TLS needs the PEM certificate it issued beside its private "
            "key (or unset both)"
        )
    if cert:
        try:
            context.load_cert_chain(cert, key or None)
        except (OSError, ssl.SSLError) as exc:
            # Without a key file, the key is read from the certificate's own file.
            named_key = (
                f"PIXRECON_{family}_CLIENT_KEY={key}"
                if key
                else f"PIXRECON_{family}_CLIENT_KEY unset, so the key is read from that file"
            )
            raise ProviderTlsError(
                f"PIXRECON_{family}_CLIENT_CERT={cert} / {named_key}: "
                f"{_why(exc)}: the provider's mutual TLS needs the PEM certificate it issued "
                "and its private key, both readable (or unset both)"
            ) from None
    return httpx.Client(verify=context, timeout=10.0)


def retry_policy(settings: Settings) -> RetryPolicy:
    return RetryPolicy.within(
        settings.provider_retry_seconds,
        max_delay=settings.provider_max_backoff_seconds,
        max_retry_after=settings.provider_max_retry_after_seconds,
    )


def qrcode_api(settings: Settings) -> QrCodeApi | None:
    """``None`` when the QR code API is not configured (its jobs are then skipped)."""
    s = settings
    # Spelled out (as in ``Settings.qrcode_configured``) so the type checker sees them set.
    if not (s.qrcode_api_url and s.qrcode_client_id and s.qrcode_client_secret):
        return None
    return QrCodeApi(
        s.qrcode_api_url,
        s.qrcode_client_id,
        s.qrcode_client_secret,
        http_client=_http("QRCODE", s.qrcode_client_cert, s.qrcode_client_key, s.qrcode_ca_bundle),
        retry=retry_policy(s),
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
        http_client=_http(
            "ACCOUNTS", s.accounts_client_cert, s.accounts_client_key, s.accounts_ca_bundle
        ),
        retry=retry_policy(s),
    )


@dataclass(frozen=True)
class ProviderClients:
    """Both API families as configured; a family left unset is ``None``."""

    qrcode: QrCodeApi | None
    accounts: AccountsApi | None

    def close(self) -> None:
        for client in (self.qrcode, self.accounts):
            if client is not None:
                client.close()


def provider_clients(settings: Settings) -> ProviderClients:
    return ProviderClients(qrcode=qrcode_api(settings), accounts=accounts_api(settings))
