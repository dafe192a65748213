"""Mutual TLS: the provider proves itself with a client certificate.

Two deployments. ``pixrecon serve`` terminates TLS itself with ``CERT_REQUIRED``: the
handshake already refused every client without a certificate from the configured CA, so
an HTTPS request here is a verified one. Or a proxy (nginx, Caddy) verifies and reports
the result in a header, which means something only when the request comes straight from
that proxy — from anyone else it is just a string the client chose.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.requests import Request

from receiver.auth.client import ClientResolver
from receiver.problems import Problem

REQUIRED = "a client certificate verified by our CA is required"


class MutualTls:
    def __init__(
        self,
        *,
        terminated_here: bool,
        verified_header: str | None,
        verified_value: str,
        subject_header: str | None,
        allowed_subjects: Sequence[str],
        resolver: ClientResolver,
        errors: list[str],
    ) -> None:
        self.terminated_here = terminated_here
        self.verified_header = verified_header
        self.verified_value = verified_value
        self.subject_header = subject_header
        self.allowed_subjects = frozenset(allowed_subjects)
        self._resolver = resolver
        if verified_header and not resolver.trusted_proxies:
            errors.append(
                "PIXRECON_MTLS_VERIFIED_HEADER is set but PIXRECON_TRUSTED_PROXIES is empty: "
                "the header is believed only from a trusted proxy, so every request would fail"
            )
        if verified_header and not verified_value:
            errors.append("PIXRECON_MTLS_VERIFIED_VALUE must not be empty")
        if subject_header and not allowed_subjects:
            errors.append(
                "PIXRECON_MTLS_SUBJECT_HEADER is set but PIXRECON_MTLS_ALLOWED_SUBJECTS is empty"
            )
        if allowed_subjects and not subject_header:
            errors.append(
                "PIXRECON_MTLS_ALLOWED_SUBJECTS is set but PIXRECON_MTLS_SUBJECT_HEADER is not"
            )
        if allowed_subjects and terminated_here:
            # Connections verified by uvicorn carry no subject we could check, so the list
            # would silently not apply to them.
            errors.append(
                "PIXRECON_MTLS_ALLOWED_SUBJECTS cannot be enforced when `pixrecon serve` "
                "terminates mutual TLS itself (PIXRECON_TLS_CLIENT_CA); use a CA that signs "
                "only the provider's certificates, or verify at a proxy"
            )
        if (subject_header or allowed_subjects) and not verified_header:
            errors.append(
                "the client certificate subject is checked only with "
                "PIXRECON_MTLS_VERIFIED_HEADER set"
            )

    @property
    def configured(self) -> bool:
        return self.terminated_here or bool(self.verified_header)

    def check(self, request: Request) -> None:
        # With uvicorn's proxy headers disabled (``pixrecon serve`` does), the scheme is
        # that of the socket, so plain HTTP means this app is being served without the
        # TLS set-up it was configured for: refuse rather than trust the configuration.
        if self.terminated_here and request.scope.get("scheme") == "https":
            return
        if self.verified_header is not None and self._verified_by_proxy(
            request, self.verified_header
        ):
            return
        raise Problem(401, "client-certificate-required", REQUIRED)

    def _verified_by_proxy(self, request: Request, verified_header: str) -> bool:
        if not self._resolver.peer_is_trusted(request):
            return False
        if request.headers.get(verified_header) != self.verified_value:
            return False
        if self.subject_header is None:
            return True
        subject = request.headers.get(self.subject_header)
        if subject is None or subject not in self.allowed_subjects:
            raise Problem(
                401,
                "client-certificate-not-allowed",
                "the client certificate is valid but its subject is not in the allowed list",
            )
        return True
