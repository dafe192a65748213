"""Balance, statement, infractions, invoices and customers of the merchant's account.

``GET /accounts/balances`` →
``{"accountId", "currency": "BRL", "available": 1234.56, "updatedAt"}``.

``GET /accounts/statement?start=&end=&page=&perPage=`` (``start`` and ``end`` are
RFC 3339 and required; ``start <= createdAt < end``) → ``{meta, data}`` of lines
``{id, type: CREDIT|DEBIT, category, amount, balanceAfter, endToEndId,
originalEndToEndId, idempotencyKey, txId, infractionId, createdAt}`` in time order;
``category`` is PIX_RECEIVED, PIX_REFUND_SENT, PIX_PAYMENT, PIX_PAYMENT_REFUND or
INFRACTION_DEBIT. The real provider's path is not public; the client keeps it in one place.

``GET /infractions?status=&start=&end=&page=&perPage=`` and ``GET /infractions/{id}`` →
``{id, status: OPEN|CLOSED, endToEndId, amount, reason, analysisResult, debitedAmount,
blockedAmount, createdAt, analysisDeadline, closedAt}`` (``blockedAmount``: held as a
precaution, no money moved; ``analysisDeadline``: ``createdAt`` + 7 days, the MED's analysis
period). ``GET /invoices`` and ``GET /customers`` are plain ``{meta, data}``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from sandbox.accounts import problems
from sandbox.accounts.guards import accounts_endpoint, accounts_of
from sandbox.accounts.infractions import STATUSES as INFRACTION_STATUSES
from sandbox.accounts.jsonio import ExactJSONResponse
from sandbox.accounts.paging import QueryErrors, envelope, page_params
from sandbox.accounts.state import AccountsState
from sandbox.clock import format_rfc3339


def _invalid(errors: QueryErrors) -> Response:
    return problems.problem(
        400, problems.INVALID_REQUEST, "Invalid query parameters.", violations=errors
    )


@accounts_endpoint("GET /accounts/balances")
async def get_balances(request: Request) -> Response:
    accounts = accounts_of(request)
    return ExactJSONResponse(
        {
            "accountId": accounts.account_id,
            "currency": "BRL",
            "available": accounts.balance(),
            "updatedAt": format_rfc3339(accounts.clock()),
        }
    )


@accounts_endpoint("GET /accounts/statement")
async def get_statement(request: Request) -> Response:
    errors = QueryErrors()
    params = request.query_params
    start = errors.instant(params, "start", required=True)
    end = errors.instant(params, "end", required=True)
    page, per_page = page_params(params, errors)
    if start is not None and end is not None and end < start:
        errors.append(problems.violation("end", "must not be before start"))
    if errors or start is None or end is None:
        return _invalid(errors)
    lines = accounts_of(request).statement(start, end)
    return ExactJSONResponse(envelope(lines, page, per_page))


@accounts_endpoint("GET /infractions")
async def list_infractions(request: Request) -> Response:
    errors = QueryErrors()
    params = request.query_params
    status = params.get("status")
    if status is not None and status not in INFRACTION_STATUSES:
        errors.append(problems.violation("status", "must be OPEN or CLOSED"))
    start = errors.instant(params, "start", required=False)
    end = errors.instant(params, "end", required=False)
    page, per_page = page_params(params, errors)
    if errors:
        return _invalid(errors)
    cases = accounts_of(request).infractions.query(status=status, start=start, end=end)
    return ExactJSONResponse(envelope(cases, page, per_page))


@accounts_endpoint("GET /infractions/{id}")
async def get_infraction(request: Request) -> Response:
    case = accounts_of(request).infractions.get(str(request.path_params["infraction_id"]))
    if case is None:
        return problems.problem(404, problems.NOT_FOUND, "Infraction not found.")
    return ExactJSONResponse(case)


def _simple_list(
    items: Callable[[AccountsState], Sequence[dict[str, Any]]],
) -> Callable[[Request], Any]:
    async def handler(request: Request) -> Response:
        errors = QueryErrors()
        page, per_page = page_params(request.query_params, errors)
        if errors:
            return _invalid(errors)
        return ExactJSONResponse(envelope(items(accounts_of(request)), page, per_page))

    return handler


list_invoices = accounts_endpoint("GET /invoices")(_simple_list(lambda a: a.directory.invoices()))
list_customers = accounts_endpoint("GET /customers")(
    _simple_list(lambda a: a.directory.customers())
)
