"""Translate the provider's HTTP answers into data or typed errors, at the boundary."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from decimal import Decimal
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from reconcile.payloads.text import may_hold_surrogates, mend_surrogates
from reconcile.provider.errors import (
    AuthenticationFailed,
    BadRequest,
    Forbidden,
    InvalidResponse,
    NotFound,
    ProviderError,
    ProviderUnavailable,
)

# OAuth2 (RFC 6749 §5.2) error codes that mean "these credentials will never work".
_OAUTH_CLIENT_ERRORS = frozenset({"invalid_client", "unauthorized_client"})
_OAUTH_SCOPE_ERRORS = frozenset({"invalid_scope"})


def decode_json(response: httpx.Response) -> Any:
    """JSON with numbers as ``Decimal``, so an amount sent as ``110.1`` stays exact, and
    lone surrogates mended as the receiver mends them (``reconcile.payloads.text``): no
    database column can hold one, and a polled item must store as a notified one does."""
    document = json.loads(response.content, parse_float=Decimal)
    if may_hold_surrogates(response.content):
        return mend_surrogates(document)
    return document


def json_object(response: httpx.Response) -> dict[str, Any]:
    try:
        body = decode_json(response)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise InvalidResponse(
            f"{_where(response)}: body is not JSON", status=response.status_code
        ) from None
    if not isinstance(body, dict):
        raise InvalidResponse(
            f"{_where(response)}: expected a JSON object, got {type(body).__name__}",
            status=response.status_code,
        )
    return body


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """``Retry-After`` as seconds from now: delta-seconds or an HTTP date (RFC 9110)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def _where(response: httpx.Response) -> str:
    # The path only: query strings can carry payer documents (cpf/cnpj filters).
    return f"{response.request.method} {response.request.url.path} -> {response.status_code}"


def _problem_of(response: httpx.Response) -> dict[str, Any]:
    try:
        body = decode_json(response)
    except (json.JSONDecodeError, UnicodeDecodeError):
        text = response.text.strip()
        return {"detail": text[:500]} if text else {}
    return body if isinstance(body, dict) else {"detail": body}


def error_for(response: httpx.Response) -> ProviderError:
    """The typed error for a non-2xx response (RFC 7807 / BCB ``Problema`` / OAuth2)."""
    status = response.status_code
    problem = _problem_of(response)
    summary = " ".join(
        str(problem[key])
        for key in ("title", "error", "detail", "error_description")
        if isinstance(problem.get(key), str | int)
    )
    message = f"{_where(response)}: {summary}" if summary else _where(response)
    oauth_error = problem.get("error")

    if status == 429 or status == 408 or status >= 500:
        retry_after = parse_retry_after(response.headers.get("retry-after"))
        return ProviderUnavailable(message, status=status, problem=problem, retry_after=retry_after)
    if status == 401 or oauth_error in _OAUTH_CLIENT_ERRORS:
        return AuthenticationFailed(message, status=status, problem=problem)
    if status == 403 or oauth_error in _OAUTH_SCOPE_ERRORS:
        return Forbidden(message, status=status, problem=problem)
    if status in (404, 410):
        return NotFound(message, status=status, problem=problem)
    if status in (400, 422):
        return BadRequest(message, status=status, problem=problem)
    return ProviderError(message, status=status, problem=problem)


def transport_error(exc: httpx.TransportError, method: str, url: httpx.URL) -> ProviderUnavailable:
    kind = "timed out" if isinstance(exc, httpx.TimeoutException) else "failed"
    return ProviderUnavailable(f"{method} {url.path} {kind}: {type(exc).__name__}: {exc}")
