"""``POST /oauth/token`` of the accounts API: client credentials, rate limited.

Credentials are accepted as HTTP Basic, as form fields (``client_id``, ``client_secret``,
``grant_type``) or as a JSON body (``clientId``, ``clientSecret``, ``grantType``), because
clients of this provider send all three. The answer uses the provider's spelling::

    {"accessToken": "...", "tokenType": "Bearer", "expiresAt": 1767225600000}

with ``expiresAt`` in epoch milliseconds (``AccountsState.expires_at_unit = "s"`` switches
to seconds). Beyond ``tokens.rate_limit`` tokens per client per
``tokens.rate_window_seconds`` the endpoint answers 429 ``onz-9429`` with ``Retry-After``.
"""

from __future__ import annotations

import json
import math
from typing import Any
from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sandbox.accounts import problems
from sandbox.accounts.guards import accounts_of, scripted_fault
from sandbox.accounts.tokens import TokenRateLimited
from sandbox.credentials import basic_credentials
from sandbox.faults import Endpoint

_NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def _fields(request: Request, raw: bytes) -> dict[str, str] | None:
    """The request's credential fields by their snake_case names; ``None`` if unreadable."""
    try:
        text = raw.decode("utf-8")
        if "json" in request.headers.get("content-type", ""):
            body: Any = json.loads(text) if text.strip() else {}
            if not isinstance(body, dict):
                return None
            names = {"clientId": "client_id", "clientSecret": "client_secret"}
            names["grantType"] = "grant_type"
            return {names.get(str(k), str(k)): v for k, v in body.items() if isinstance(v, str)}
        return dict(parse_qsl(text, keep_blank_values=True))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None


async def token_endpoint(request: Request) -> Response:
    accounts = accounts_of(request)
    accounts.record_request("POST /oauth/token")
    raw = await request.body()
    failure = await scripted_fault(accounts, Endpoint.TOKEN)
    if failure is not None:
        return failure

    fields = _fields(request, raw)
    if fields is None:
        return problems.problem(400, problems.INVALID_REQUEST, "Unreadable token request.")
    grant = fields.get("grant_type", "client_credentials")
    if grant != "client_credentials":
        return problems.problem(
            400,
            problems.INVALID_REQUEST,
            "Only client_credentials is supported.",
            violations=[problems.violation("grant_type", "must be client_credentials")],
        )
    credentials = basic_credentials(request)
    if credentials is None and "client_id" in fields:
        credentials = (fields["client_id"], fields.get("client_secret", ""))
    client = accounts.tokens.authenticate(*credentials) if credentials is not None else None
    if client is None:
        return problems.problem(401, problems.INVALID_CLIENT, "Unknown client or wrong secret.")

    try:
        token = accounts.tokens.issue(client)
    except TokenRateLimited as exc:
        # Rounded up: a client that waits exactly Retry-After must not be refused again.
        wait = max(1, math.ceil(exc.retry_after))
        return problems.problem(
            429,
            problems.RATE_LIMITED,
            "Too many tokens requested.",
            headers={"Retry-After": str(wait), **_NO_STORE},
        )
    # Rounded down so a client never believes a token lives longer than it does.
    expires = token.expires_at.timestamp()
    expires_at = math.floor(expires * 1000 if accounts.expires_at_unit == "ms" else expires)
    return JSONResponse(
        {"accessToken": token.value, "tokenType": "Bearer", "expiresAt": expires_at},
        headers=_NO_STORE,
    )
