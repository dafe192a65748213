"""TLS for ``pixrecon serve``: uvicorn's options from settings, checked before start-up.

With ``PIXRECON_TLS_CLIENT_CA`` the handshake demands a client certificate signed by that
CA (``CERT_REQUIRED``), so unverified clients never reach the application.
"""

from __future__ import annotations

import ssl
from typing import TypedDict

from reconcile.settings import Settings


class TlsConfigError(ValueError):
    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


class TlsOptions(TypedDict, total=False):
    """Keyword arguments of ``uvicorn.run`` / ``uvicorn.Config``."""

    ssl_certfile: str
    ssl_keyfile: str
    ssl_ca_certs: str
    ssl_cert_reqs: int


def _cert_and_key(settings: Settings) -> tuple[str, str] | None:
    if settings.tls_certfile and settings.tls_keyfile:
        return settings.tls_certfile, settings.tls_keyfile
    return None


def terminates_tls(settings: Settings) -> bool:
    return _cert_and_key(settings) is not None


def terminates_mtls(settings: Settings) -> bool:
    return terminates_tls(settings) and bool(settings.tls_client_ca)


def coherence_errors(settings: Settings) -> list[str]:
    """Settings that contradict each other; files are not looked at."""
    errors: list[str] = []
    if bool(settings.tls_certfile) != bool(settings.tls_keyfile):
        errors.append("PIXRECON_TLS_CERTFILE and PIXRECON_TLS_KEYFILE must be set together")
    if settings.tls_client_ca and not terminates_tls(settings):
        errors.append(
            "PIXRECON_TLS_CLIENT_CA is set but TLS is not terminated here: set "
            "PIXRECON_TLS_CERTFILE and PIXRECON_TLS_KEYFILE too"
        )
    return errors


def _file_errors(settings: Settings, certfile: str, keyfile: str) -> list[str]:
    # Loading the files the way uvicorn will turns a traceback in the middle of start-up
    # into one sentence naming the variable at fault.
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    errors: list[str] = []
    try:
        context.load_cert_chain(certfile, keyfile)
    except (OSError, ssl.SSLError) as exc:
        errors.append(
            "PIXRECON_TLS_CERTFILE / PIXRECON_TLS_KEYFILE cannot be loaded "
            f"({certfile}, {keyfile}): {exc}"
        )
    if settings.tls_client_ca:
        try:
            context.load_verify_locations(settings.tls_client_ca)
        except (OSError, ssl.SSLError) as exc:
            errors.append(
                f"PIXRECON_TLS_CLIENT_CA cannot be loaded ({settings.tls_client_ca}): {exc}"
            )
    return errors


def tls_errors(settings: Settings) -> list[str]:
    """Everything that would stop uvicorn from serving TLS as configured."""
    errors = coherence_errors(settings)
    paths = _cert_and_key(settings)
    if not errors and paths is not None:
        errors.extend(_file_errors(settings, *paths))
    return errors


def tls_options(settings: Settings) -> TlsOptions:
    """Empty when TLS is not terminated here (plain HTTP, e.g. behind a proxy)."""
    errors = tls_errors(settings)
    if errors:
        raise TlsConfigError(errors)
    paths = _cert_and_key(settings)
    if paths is None:
        return {}
    options: TlsOptions = {"ssl_certfile": paths[0], "ssl_keyfile": paths[1]}
    if settings.tls_client_ca:
        options["ssl_ca_certs"] = settings.tls_client_ca
        options["ssl_cert_reqs"] = ssl.CERT_REQUIRED
    return options
