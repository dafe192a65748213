"""Reading client credentials and bearer tokens, shared by both API families' OAuth."""

from __future__ import annotations

import base64
import binascii
import hmac
import secrets
from typing import Protocol, TypeVar

from starlette.requests import Request


class _HasSecret(Protocol):
    @property
    def secret(self) -> str: ...


C = TypeVar("C", bound=_HasSecret)


def basic_credentials(request: Request) -> tuple[str, str] | None:
    """``(client_id, secret)`` from ``Authorization: Basic``; ``None`` if absent or bad."""
    scheme, _, encoded = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    client_id, sep, secret = decoded.partition(":")
    return (client_id, secret) if sep else None


def bearer_token(request: Request) -> str | None:
    """The token of ``Authorization: Bearer``; ``None`` if absent or empty."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def verified(client: C | None, secret: str) -> C | None:
    """``client`` if ``secret`` is its secret; compared even for an unknown client (``None``)
    so that timing does not reveal which client ids exist."""
    expected = client.secret if client is not None else secrets.token_hex(16)
    if not hmac.compare_digest(expected.encode(), secret.encode()):
        return None
    return client
