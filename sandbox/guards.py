"""What runs before every sandbox handler: request accounting, scripted faults, bearer auth."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response

from sandbox.credentials import bearer_token
from sandbox.faults import Endpoint
from sandbox.problems import problem
from sandbox.state import SandboxProvider

Handler = Callable[[Request], Awaitable[Response]]


def provider_of(request: Request) -> SandboxProvider:
    provider = request.app.state.provider
    if not isinstance(provider, SandboxProvider):
        raise TypeError("app.state.provider is not a SandboxProvider")
    return provider


async def scripted_fault(provider: SandboxProvider, endpoint: Endpoint) -> Response | None:
    fault = await provider.faults.play(endpoint)
    if fault is None or fault.status is None:
        return None
    return problem(fault.status, detail="Falha simulada pelo sandbox.", headers=fault.headers)


def _authorize(request: Request, provider: SandboxProvider, scope: str) -> Response | None:
    raw = bearer_token(request)
    if raw is None:
        return problem(
            401,
            detail="Token de acesso ausente.",
            headers={"WWW-Authenticate": 'Bearer realm="sandbox"'},
        )
    token = provider.tokens.lookup(raw)
    if token is None:
        return problem(
            401,
            detail="Token de acesso inválido ou expirado.",
            headers={"WWW-Authenticate": 'Bearer realm="sandbox", error="invalid_token"'},
        )
    if scope not in token.scopes:
        return problem(
            403,
            detail=f"O token não tem o escopo {scope}.",
            headers={
                "WWW-Authenticate": (
                    f'Bearer realm="sandbox", error="insufficient_scope", scope="{scope}"'
                )
            },
        )
    return None


def api_endpoint(name: str, scope: str) -> Callable[[Handler], Handler]:
    """Wrap a QR code API handler: count it, play any scripted fault, then demand ``scope``.

    Faults come before authentication because in front of a real provider they come from
    the gateway, which answers before any token is looked at.
    """

    def decorate(handler: Handler) -> Handler:
        @functools.wraps(handler)
        async def guarded(request: Request) -> Response:
            provider = provider_of(request)
            provider.record_request(name)
            failure = await scripted_fault(provider, Endpoint.API)
            if failure is not None:
                return failure
            denied = _authorize(request, provider, scope)
            if denied is not None:
                return denied
            return await handler(request)

        return guarded

    return decorate
