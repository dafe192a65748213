"""Clients of the provider's APIs; errors are translated to ``reconcile.provider.errors``."""

from reconcile.provider.accounts_api import AccountsApi, IdempotencyConflict
from reconcile.provider.accounts_shapes import AccountsPaths
from reconcile.provider.errors import (
    AuthenticationFailed,
    BadRequest,
    Forbidden,
    InvalidResponse,
    NotFound,
    ProviderError,
    ProviderUnavailable,
)
from reconcile.provider.oauth import TokenCache
from reconcile.provider.qrcode_api import QrCodeApi
from reconcile.provider.retry import RetryPolicy

__all__ = [
    "AccountsApi",
    "AccountsPaths",
    "AuthenticationFailed",
    "BadRequest",
    "Forbidden",
    "IdempotencyConflict",
    "InvalidResponse",
    "NotFound",
    "ProviderError",
    "ProviderUnavailable",
    "QrCodeApi",
    "RetryPolicy",
    "TokenCache",
]
