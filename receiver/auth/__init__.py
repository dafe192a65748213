"""Webhook authentication. Notifications are not signed, so the defences are combined:
IP allow-list (with trusted proxies), a shared secret header, mutual TLS and — for
providers that sign — Standard Webhooks HMAC. ``docs/security.md`` explains each."""

from receiver.auth.policy import DEFENCES, FAMILIES, Defence, Family
from receiver.auth.webhook import (
    AuthConfigError,
    WebhookAuth,
    auth_is_configured,
    configuration_errors,
)

__all__ = [
    "DEFENCES",
    "FAMILIES",
    "AuthConfigError",
    "Defence",
    "Family",
    "WebhookAuth",
    "auth_is_configured",
    "configuration_errors",
]
