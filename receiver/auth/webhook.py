"""Every defence a family of webhook routes requires, checked in one place."""

from __future__ import annotations

from starlette.requests import Request

from receiver.auth.client import ClientResolver, parse_networks
from receiver.auth.ip import IpAllowList
from receiver.auth.mtls import MutualTls
from receiver.auth.policy import FAMILIES, Defence, Family, select_defences
from receiver.auth.secret import SecretHeader
from receiver.auth.signature import StandardWebhooks
from receiver.tls import coherence_errors, terminates_mtls, tls_errors
from reconcile.settings import Settings

# Credentials of any kind never reach the database, whatever the route.
ALWAYS_REDACTED = frozenset({"authorization", "cookie", "proxy-authorization"})


class AuthConfigError(ValueError):
    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


class WebhookAuth:
    """Built once per family at start-up; raises ``AuthConfigError`` listing every problem
    of the configuration, so a mistake stops the process instead of opening a hole."""

    def __init__(self, settings: Settings, family: Family) -> None:
        self.family = family
        # A client CA without a certificate to serve means mutual TLS was intended but is
        # not happening.
        errors = coherence_errors(settings)
        self._resolver = ClientResolver(
            parse_networks(settings.trusted_proxies, "PIXRECON_TRUSTED_PROXIES", errors)
        )
        self._ip = IpAllowList(
            parse_networks(settings.allow_ips, "PIXRECON_ALLOW_IPS", errors), self._resolver
        )
        self._secret = SecretHeader(
            settings.webhook_secret_header, settings.webhook_secrets, errors
        )
        self._mtls = MutualTls(
            terminated_here=terminates_mtls(settings),
            verified_header=settings.mtls_verified_header,
            verified_value=settings.mtls_verified_value,
            subject_header=settings.mtls_subject_header,
            allowed_subjects=settings.mtls_allowed_subjects,
            resolver=self._resolver,
            errors=errors,
        )
        self._hmac = StandardWebhooks(
            settings.hmac_secrets, settings.hmac_tolerance_seconds, errors
        )
        available: set[Defence] = set()
        if settings.allow_ips:
            available.add("ip")
        if settings.webhook_secrets:
            available.add("secret")
        if self._mtls.configured:
            available.add("mtls")
        if settings.hmac_secrets:
            available.add("hmac")
        self.defences = select_defences(settings, family, available, errors)
        self._secret_header = settings.webhook_secret_header.lower()
        if errors:
            raise AuthConfigError(errors)

    @property
    def configured(self) -> bool:
        return bool(self.defences)

    def client_ip(self, request: Request) -> str | None:
        return self._resolver.client_ip(request)

    def check_request(self, request: Request) -> None:
        """Before the body is read, so an unauthenticated client cannot make us read it."""
        if "ip" in self.defences:
            self._ip.check(request)
        if "secret" in self.defences:
            self._secret.check(request)
        if "mtls" in self.defences:
            self._mtls.check(request)

    def check_body(self, request: Request, body: bytes) -> None:
        if "hmac" in self.defences:
            self._hmac.verify(request.headers, body)

    def redacted_headers(self) -> frozenset[str]:
        # The secret header is dropped even where this family does not check it: a
        # provider may send it anyway, and it is a credential all the same.
        return ALWAYS_REDACTED | {self._secret_header}


def configuration_errors(settings: Settings) -> list[str]:
    """Everything wrong with the webhook security settings, for a start-up refusal."""
    errors = tls_errors(settings)
    for family in FAMILIES:
        try:
            WebhookAuth(settings, family)
        except AuthConfigError as exc:
            errors.extend(exc.errors)
    return list(dict.fromkeys(errors))


def auth_is_configured(settings: Settings) -> bool:
    """Every family is guarded by at least one defence (and the settings are coherent)."""
    try:
        return all(WebhookAuth(settings, family).configured for family in FAMILIES)
    except AuthConfigError:
        return False
