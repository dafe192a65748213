"""``POST /webhooks/{type}`` registers where notifications of a type go; ``GET /webhooks``.

Body: ``{"url": "https://merchant/webhooks/accounts", "secretHeader": {"name":
"X-Webhook-Secret", "value": "..."}}`` (``secretHeader`` optional). ``type`` is one of
TRANSFER, RECEIVE, REFUND, CASHOUT, INFRACTION, INVOICE (any case). Registering a type
again replaces its URL. Answers 201 with ``{type, url, secretHeader: {name}, createdAt}``
— the secret value is write-only, never echoed.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sandbox.accounts import problems
from sandbox.accounts.directory import WEBHOOK_TYPES
from sandbox.accounts.guards import accounts_endpoint, accounts_of
from sandbox.accounts.paging import QueryErrors, envelope, page_params


@accounts_endpoint("POST /webhooks/{type}")
async def register_webhook(request: Request) -> Response:
    kind = str(request.path_params["kind"]).upper()
    if kind not in WEBHOOK_TYPES:
        return problems.problem(404, problems.NOT_FOUND, "Unknown webhook type.")
    try:
        body = json.loads(await request.body())
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = None
    errors: list[dict[str, str]] = []
    url = body.get("url") if isinstance(body, dict) else None
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        errors.append(problems.violation("url", "must be an absolute http(s) URL"))
    header = body.get("secretHeader") if isinstance(body, dict) else None
    name: str | None = None
    value: str | None = None
    if header is not None:
        raw_name = header.get("name") if isinstance(header, dict) else None
        raw_value = header.get("value") if isinstance(header, dict) else None
        if isinstance(raw_name, str) and raw_name and isinstance(raw_value, str) and raw_value:
            name, value = raw_name, raw_value
        else:
            errors.append(problems.violation("secretHeader", "needs a name and a value"))
    if errors or not isinstance(url, str):
        return problems.problem(
            400, problems.INVALID_REQUEST, "Invalid webhook.", violations=errors
        )
    entry = accounts_of(request).directory.register_webhook(kind, url, name, value)
    return JSONResponse(entry.public(), status_code=201)


@accounts_endpoint("GET /webhooks")
async def list_webhooks(request: Request) -> Response:
    errors = QueryErrors()
    page, per_page = page_params(request.query_params, errors)
    if errors:
        return problems.problem(
            400, problems.INVALID_REQUEST, "Invalid query parameters.", violations=errors
        )
    entries = [w.public() for w in accounts_of(request).directory.webhooks()]
    return JSONResponse(envelope(entries, page, per_page))
