"""What runs before every accounts API handler: accounting, faults, token, account header."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response

from sandbox.accounts import problems
from sandbox.accounts.state import AccountsState
from sandbox.accounts.tokens import TokenState
from sandbox.credentials import bearer_token
from sandbox.faults import Endpoint

Handler = Callable[[Request], Awaitable[Response]]

ACCOUNT_HEADER = "x-account-id"


def accounts_of(request: Request) -> AccountsState:
    # Pinned per request by the guard: a request delayed by a scripted fault must finish
    # on the provider it started with, even if a test swapped ``app.state.provider``.
    accounts = getattr(request.state, "accounts", None)
    if accounts is None:
        accounts = getattr(request.app.state.provider, "accounts", None)
    if not isinstance(accounts, AccountsState):
        raise TypeError("app.state.provider has no AccountsState")
    return accounts


async def scripted_fault(accounts: AccountsState, endpoint: Endpoint) -> Response | None:
    fault = await accounts.faults.play(endpoint)
    if fault is None or fault.status is None:
        return None
    return problems.problem(fault.status, detail="Simulated failure.", headers=fault.headers)


def _authorize(request: Request, accounts: AccountsState) -> Response | None:
    raw = bearer_token(request)
    challenge = {"WWW-Authenticate": 'Bearer realm="sandbox-accounts"'}
    if raw is None:
        return problems.problem(
            401, problems.MISSING_TOKEN, "Bearer token missing.", headers=challenge
        )
    state, token = accounts.tokens.lookup(raw)
    if state is TokenState.EXPIRED:
        return problems.problem(401, problems.EXPIRED_TOKEN, "Token expired.", headers=challenge)
    if token is None:
        return problems.problem(401, problems.MISSING_TOKEN, "Token unknown.", headers=challenge)
    account = request.headers.get(ACCOUNT_HEADER, "").strip()
    if not account:
        return problems.problem(400, problems.MISSING_ACCOUNT, "Header x-account-id missing.")
    # The sandbox hosts one account: the header must name it and the token must cover it.
    if account != accounts.account_id or account not in token.account_ids:
        return problems.problem(
            403, problems.ACCOUNT_FORBIDDEN, "This token may not use that account."
        )
    return None


def accounts_endpoint(name: str) -> Callable[[Handler], Handler]:
    """Wrap a handler: count it, play any scripted fault, then check token and account.

    The body is read first so that a delayed request still sees it after the client has
    given up, which is how a lost response to a POST that did take effect is simulated.
    """

    def decorate(handler: Handler) -> Handler:
        @functools.wraps(handler)
        async def guarded(request: Request) -> Response:
            accounts = accounts_of(request)
            request.state.accounts = accounts
            accounts.record_request(name)
            await request.body()
            failure = await scripted_fault(accounts, Endpoint.API)
            if failure is None:
                failure = _authorize(request, accounts)
            return failure if failure is not None else await handler(request)

        return guarded

    return decorate
