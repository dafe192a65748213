"""Typed errors of the provider's APIs: the only exceptions that leave this package.

Callers decide by type: ``ProviderUnavailable`` is worth retrying later (the worker turns
it into ``dramatiq.Retry``); every other ``ProviderError`` is permanent for that request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class ProviderError(Exception):
    """Base class; ``problem`` is the parsed RFC 7807 / BCB ``Problema`` body, if any."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        problem: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.problem: Mapping[str, Any] = problem if problem is not None else {}
        # Set when the call gave up retrying: how many attempts it made, in how long. An
        # error met on the first attempt and never retried leaves them unset.
        self.attempts: int | None = None
        self.elapsed: float | None = None
        # The API family whose call failed (``qrcode``, ``accounts``), set by its client:
        # what to check after a refusal is that family's settings, not every one's.
        self.api: str | None = None

    def gave_up(self, attempts: int, elapsed: float) -> ProviderError:
        """This error, as the last of ``attempts`` made over ``elapsed`` seconds."""
        self.attempts = attempts
        self.elapsed = elapsed
        return self

    @property
    def type(self) -> str | None:
        """The problem ``type``, e.g. ``https://pix.bcb.gov.br/api/v2/error/PixNaoEncontrado``,
        or an OAuth ``error`` code such as ``invalid_client``."""
        value = self.problem.get("type", self.problem.get("error"))
        return value if isinstance(value, str) else None

    @property
    def violations(self) -> list[Mapping[str, Any]]:
        """BCB ``violacoes`` or RFC 7807-style ``violations``; empty when absent."""
        value = self.problem.get("violacoes", self.problem.get("violations"))
        return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


class ProviderUnavailable(ProviderError):
    """Transient: 5xx, 429, timeouts, connection errors. ``retry_after`` is in seconds."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        problem: Mapping[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, status=status, problem=problem)
        self.retry_after = retry_after


class NotFound(ProviderError):
    """404 (or 410): the provider does not know the entity."""


class AuthenticationFailed(ProviderError):
    """401 that a fresh token did not cure, or the token endpoint refusing the client."""


class Forbidden(ProviderError):
    """403 or ``invalid_scope``: the credentials lack the needed scope or permission."""


class BadRequest(ProviderError):
    """400/422: the provider rejected the request itself; ``violations`` says why."""


class InvalidResponse(ProviderError):
    """A success status with a body that is not the JSON object the API promises."""
