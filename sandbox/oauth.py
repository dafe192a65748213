"""``POST /oauth/token``: the OAuth2 client-credentials grant (RFC 6749 §4.4)."""

from __future__ import annotations

from urllib.parse import parse_qsl, unquote_plus

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sandbox.credentials import basic_credentials
from sandbox.faults import Endpoint
from sandbox.guards import provider_of, scripted_fault

# RFC 6749 wants token responses kept out of every cache.
_NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def _oauth_error(status: int, error: str, description: str) -> JSONResponse:
    headers = dict(_NO_STORE)
    if status == 401:
        headers["WWW-Authenticate"] = 'Basic realm="sandbox"'
    return JSONResponse(
        {"error": error, "error_description": description}, status_code=status, headers=headers
    )


async def token_endpoint(request: Request) -> Response:
    provider = provider_of(request)
    provider.record_request("POST /oauth/token")
    failure = await scripted_fault(provider, Endpoint.TOKEN)
    if failure is not None:
        return failure

    # Parsed by hand: Starlette's form parser needs python-multipart, which the project
    # does not otherwise depend on.
    try:
        form = dict(parse_qsl((await request.body()).decode("utf-8"), keep_blank_values=True))
    except UnicodeDecodeError:
        return _oauth_error(400, "invalid_request", "The body is not UTF-8 form data.")

    credentials = basic_credentials(request)
    if credentials is None and "client_id" in form:
        credentials = (form["client_id"], form.get("client_secret", ""))
    if credentials is None:
        return _oauth_error(401, "invalid_client", "Client authentication is required.")
    client = provider.tokens.authenticate(*credentials)
    if client is None:
        # RFC 6749 §2.3.1 form-urlencodes both parts inside Basic; most clients do not.
        # Accept either, as lenient providers do.
        client_id, secret = (unquote_plus(part) for part in credentials)
        client = provider.tokens.authenticate(client_id, secret)
    if client is None:
        return _oauth_error(401, "invalid_client", "Unknown client or wrong secret.")

    grant_type = form.get("grant_type")
    if grant_type is None:
        return _oauth_error(400, "invalid_request", "grant_type is required.")
    if grant_type != "client_credentials":
        return _oauth_error(400, "unsupported_grant_type", "Only client_credentials is supported.")

    requested = frozenset(form.get("scope", "").split())
    scopes = requested or client.scopes
    if not scopes <= client.scopes:
        extra = " ".join(sorted(scopes - client.scopes))
        return _oauth_error(400, "invalid_scope", f"Scopes not granted to this client: {extra}")

    token = provider.tokens.issue(client, scopes)
    return JSONResponse(
        {
            "access_token": token.value,
            "token_type": "Bearer",
            # Rounded down so a client never believes a token lives longer than it does.
            "expires_in": int(provider.tokens.lifetime_seconds),
            "scope": " ".join(sorted(scopes)),
        },
        headers=_NO_STORE,
    )
