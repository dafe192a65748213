"""The accounts (cash-out) API as a Starlette app of its own, over a ``SandboxProvider``.

The real provider serves this family at another base URL with its own OAuth clients, so
the sandbox serves it as a second app (on a second port) sharing the provider's state.
Paths (every one but the token endpoint needs ``Authorization: Bearer`` and
``x-account-id``):

| method and path | what |
|---|---|
| ``POST /oauth/token`` | client credentials, rate limited (``sandbox.accounts.oauth``) |
| ``POST /pix/payments`` | create a payout, idempotent by ``idempotencyKey`` |
| ``GET /pix/payments/{endToEndId}`` | a payout by its endToEndId |
| ``GET /pix/payments/idempotencyKey/{key}`` | a payout by its idempotency key |
| ``GET /accounts/balances`` | the available balance |
| ``GET /accounts/statement`` | statement lines in a time window (sandbox-defined path) |
| ``GET /infractions``, ``GET /infractions/{id}`` | MED cases |
| ``GET /invoices``, ``GET /customers`` | simple lists |
| ``POST /webhooks/{type}``, ``GET /webhooks`` | webhook registration |

Errors are RFC 7807 with a provider code in ``type`` (``sandbox.accounts.problems``).
For mutual TLS nothing is needed here: serve the app with
``BackgroundServer(app, ssl_certfile=..., ssl_keyfile=..., ssl_ca_certs=...,
ssl_cert_reqs=ssl.CERT_REQUIRED)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from sandbox.accounts import account_routes, payment_routes, problems, webhook_routes
from sandbox.accounts.oauth import token_endpoint

if TYPE_CHECKING:
    from sandbox.state import SandboxProvider


async def _http_problem(request: Request, exc: Exception) -> Response:
    # Unknown paths and wrong methods answer in the family's problem shape too.
    if not isinstance(exc, HTTPException):
        return problems.problem(500)
    return problems.problem(exc.status_code, detail=exc.detail or None, headers=exc.headers)


def create_accounts_app(provider: SandboxProvider | None = None) -> Starlette:
    """An app serving ``provider.accounts`` (a fresh provider when omitted).

    Tests keep the provider to drive it, and may swap ``app.state.provider`` between
    tests; handlers read it on every request.
    """
    if provider is None:
        # Imported here: sandbox.state imports this package for AccountsState.
        from sandbox.state import SandboxProvider

        provider = SandboxProvider()
    routes = [
        Route("/oauth/token", token_endpoint, methods=["POST"]),
        Route("/pix/payments", payment_routes.create_payment, methods=["POST"]),
        Route(
            "/pix/payments/idempotencyKey/{key}",
            payment_routes.get_payment_by_key,
            methods=["GET"],
        ),
        Route("/pix/payments/{end_to_end_id}", payment_routes.get_payment, methods=["GET"]),
        Route("/accounts/balances", account_routes.get_balances, methods=["GET"]),
        Route("/accounts/statement", account_routes.get_statement, methods=["GET"]),
        Route("/infractions", account_routes.list_infractions, methods=["GET"]),
        Route("/infractions/{infraction_id}", account_routes.get_infraction, methods=["GET"]),
        Route("/invoices", account_routes.list_invoices, methods=["GET"]),
        Route("/customers", account_routes.list_customers, methods=["GET"]),
        Route("/webhooks", webhook_routes.list_webhooks, methods=["GET"]),
        Route("/webhooks/{kind}", webhook_routes.register_webhook, methods=["POST"]),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: _http_problem})
    app.state.provider = provider
    return app
