"""``POST /pix/payments`` and the two payout look-ups.

Request body (``payment.amount`` or a top-level ``amount``, a string or a number)::

    {"idempotencyKey": "payout-1", "payment": {"currency": "BRL", "amount": "250.50"},
     "pixKey": "fornecedor@example.com", "description": "optional, up to 140 chars"}

or, instead of ``pixKey``, ``creditorAccount: {ispb, issuer, number, accountType,
document, name}``. A new key answers 201; the same key again answers 200 with the same
payment (never a second one); the same key with another amount or creditor is 409.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response

from sandbox.accounts import problems
from sandbox.accounts.guards import accounts_endpoint, accounts_of
from sandbox.accounts.jsonio import ExactJSONResponse, loads
from sandbox.accounts.payments import IdempotencyConflict, PaymentRequest
from sandbox.ledger import format_amount

# The key travels in a URL path (``.../idempotencyKey/{key}``), hence the narrow alphabet.
IDEMPOTENCY_KEY_RE: Final = re.compile(r"[A-Za-z0-9._:\-]{1,100}")
_ISPB_RE: Final = re.compile(r"\d{8}")
_ACCOUNT_TYPES: Final = frozenset({"CACC", "SVGS", "SLRY", "TRAN"})


def _amount(body: dict[str, Any], errors: list[dict[str, str]]) -> Decimal | None:
    payment = body.get("payment")
    raw = payment.get("amount") if isinstance(payment, dict) else body.get("amount")
    if isinstance(payment, dict) and payment.get("currency", "BRL") != "BRL":
        errors.append(problems.violation("payment.currency", "only BRL is supported"))
    try:
        if isinstance(raw, bool) or not isinstance(raw, str | int | Decimal):
            raise TypeError
        amount = Decimal(raw)
        format_amount(amount)
    except (TypeError, ValueError, InvalidOperation):
        errors.append(problems.violation("payment.amount", "must be a positive amount, 2 places"))
        return None
    return amount


def _creditor(raw: Any, errors: list[dict[str, str]]) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        errors.append(problems.violation("creditorAccount", "must be an object"))
        return None
    if not isinstance(raw.get("ispb"), str) or not _ISPB_RE.fullmatch(raw["ispb"]):
        errors.append(problems.violation("creditorAccount.ispb", "must be 8 digits"))
    if not isinstance(raw.get("number"), str) or not raw["number"]:
        errors.append(problems.violation("creditorAccount.number", "is required"))
    if raw.get("accountType", "CACC") not in _ACCOUNT_TYPES:
        errors.append(problems.violation("creditorAccount.accountType", "unknown account type"))
    fields = ("ispb", "issuer", "number", "accountType", "document", "name")
    account = {k: raw.get(k) for k in fields}
    account["accountType"] = account["accountType"] or "CACC"
    return account


def parse_payment(body: Any) -> PaymentRequest | list[dict[str, str]]:
    if not isinstance(body, dict):
        return [problems.violation("", "the body must be a JSON object")]
    errors: list[dict[str, str]] = []
    key = body.get("idempotencyKey")
    if not isinstance(key, str) or not IDEMPOTENCY_KEY_RE.fullmatch(key):
        errors.append(
            problems.violation("idempotencyKey", "required: 1-100 of A-Z a-z 0-9 . _ : -")
        )
    amount = _amount(body, errors)
    pix_key = body.get("pixKey")
    creditor = None
    if (pix_key is None) == (body.get("creditorAccount") is None):
        errors.append(problems.violation("pixKey", "send either pixKey or creditorAccount"))
    elif pix_key is not None and (not isinstance(pix_key, str) or not 1 <= len(pix_key) <= 77):
        errors.append(problems.violation("pixKey", "must be a Pix key of 1-77 characters"))
    elif pix_key is None:
        creditor = _creditor(body["creditorAccount"], errors)
    description = body.get("description")
    if description is not None and (not isinstance(description, str) or len(description) > 140):
        errors.append(problems.violation("description", "at most 140 characters"))
    if errors or amount is None or not isinstance(key, str):
        return errors
    return PaymentRequest(key, amount, pix_key, creditor, description)


@accounts_endpoint("POST /pix/payments")
async def create_payment(request: Request) -> Response:
    try:
        body = loads(await request.body())
    except (json.JSONDecodeError, UnicodeDecodeError):
        return problems.problem(400, problems.INVALID_REQUEST, "The body is not JSON.")
    parsed = parse_payment(body)
    if isinstance(parsed, list):
        return problems.problem(
            400, problems.INVALID_REQUEST, "Invalid payment.", violations=parsed
        )
    try:
        payment, created = accounts_of(request).payments.create(parsed)
    except IdempotencyConflict:
        return problems.problem(
            409,
            problems.IDEMPOTENCY_CONFLICT,
            "This idempotencyKey was used for a different payment.",
        )
    return ExactJSONResponse(payment, status_code=201 if created else 200)


def _not_found(what: str) -> Response:
    return problems.problem(404, problems.NOT_FOUND, f"Payment not found for {what}.")


@accounts_endpoint("GET /pix/payments/{endToEndId}")
async def get_payment(request: Request) -> Response:
    e2e = str(request.path_params["end_to_end_id"])
    payment = accounts_of(request).payments.get_by_e2e(e2e)
    return ExactJSONResponse(payment) if payment is not None else _not_found("endToEndId")


@accounts_endpoint("GET /pix/payments/idempotencyKey/{key}")
async def get_payment_by_key(request: Request) -> Response:
    key = str(request.path_params["key"])
    payment = accounts_of(request).payments.get_by_key(key)
    return ExactJSONResponse(payment) if payment is not None else _not_found("idempotencyKey")
