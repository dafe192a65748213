"""RFC 7807 problems of the accounts API, whose ``type`` is a bare provider code.

Only ``onz-0018`` (expired token) is known from the real provider. The ``onz-9xxx`` codes
are the sandbox's own, one per situation, so tests and clients can tell them apart:

| code      | status | when |
|-----------|--------|------|
| onz-0018  | 401    | the bearer token has expired (the provider's own code) |
| onz-9001  | 401    | token endpoint: unknown client or wrong secret |
| onz-9400  | 400    | invalid body or query parameters (``violations`` lists why) |
| onz-9401  | 401    | bearer token missing or unknown |
| onz-9402  | 400    | ``x-account-id`` header missing |
| onz-9403  | 403    | ``x-account-id`` names an account this token may not use |
| onz-9404  | 404    | the resource does not exist |
| onz-9409  | 409    | the idempotency key was used before with a different request |
| onz-9429  | 429    | rate limited (the token endpoint); ``Retry-After`` says how long |
| onz-9NNN  | NNN    | a scripted failure (``fail_next``), e.g. onz-9503 |
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from starlette.responses import JSONResponse

PROBLEM_MEDIA_TYPE: Final = "application/problem+json"

EXPIRED_TOKEN: Final = "onz-0018"  # noqa: S105 - an error code, not a secret
INVALID_CLIENT: Final = "onz-9001"
INVALID_REQUEST: Final = "onz-9400"
MISSING_TOKEN: Final = "onz-9401"  # noqa: S105 - an error code, not a secret
MISSING_ACCOUNT: Final = "onz-9402"
ACCOUNT_FORBIDDEN: Final = "onz-9403"
NOT_FOUND: Final = "onz-9404"
IDEMPOTENCY_CONFLICT: Final = "onz-9409"
RATE_LIMITED: Final = "onz-9429"

_TITLES: Final[Mapping[int, str]] = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    409: "Conflict",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


def violation(field: str, reason: str) -> dict[str, str]:
    # Values are never echoed: a body can carry account numbers and documents.
    return {"field": field, "reason": reason}


def problem(
    status: int,
    code: str | None = None,
    detail: str | None = None,
    *,
    violations: Sequence[Mapping[str, str]] | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    body: dict[str, Any] = {
        "type": code or f"onz-9{status:03d}",
        "title": _TITLES.get(status, "Error"),
        "status": status,
    }
    if detail is not None:
        body["detail"] = detail
    if violations:
        body["violations"] = [dict(v) for v in violations]
    return JSONResponse(body, status_code=status, headers=headers, media_type=PROBLEM_MEDIA_TYPE)
