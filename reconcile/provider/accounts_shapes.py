"""Shapes of the accounts API: its paths, exact amounts, and ``{meta, data}`` list walking.

Kept apart from the client so that a deployment correcting a path, or a new list, touches
one small module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from reconcile.provider.errors import InvalidResponse
from reconcile.provider.paging import whole_number

GetJson = Callable[[str, Mapping[str, str | int]], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class AccountsPaths:
    """Every path of the family. Statement and list paths are the sandbox's guesses."""

    token: str = "/oauth/token"  # noqa: S105 - a path, not a secret
    payments: str = "/pix/payments"
    payment: str = "/pix/payments/{end_to_end_id}"
    payment_by_key: str = "/pix/payments/idempotencyKey/{key}"
    balance: str = "/accounts/balances"
    statement: str = "/accounts/statement"
    infractions: str = "/infractions"
    infraction: str = "/infractions/{id}"
    invoices: str = "/invoices"
    webhook: str = "/webhooks/{type}"


def money(value: Any, where: str = "amount") -> Decimal:
    """An amount as sent: a JSON number (already parsed as ``Decimal``), int or string."""
    try:
        if isinstance(value, bool) or not isinstance(value, Decimal | int | str):
            raise TypeError
        amount = Decimal(value.strip() if isinstance(value, str) else value)
    except (TypeError, InvalidOperation):
        raise InvalidResponse(f"{where} is not an amount: {value!r}", status=200) from None
    if not amount.is_finite():
        raise InvalidResponse(f"{where} is not a finite amount", status=200)
    return amount


def with_money(obj: Mapping[str, Any], *fields: str) -> dict[str, Any]:
    """A copy of ``obj`` with the named amount fields as ``Decimal`` (nulls kept)."""
    out = dict(obj)
    for name in fields:
        if out.get(name) is not None:
            out[name] = money(out[name], name)
    return out


def payment_with_money(body: Mapping[str, Any]) -> dict[str, Any]:
    """A payout (TRANSFER ``data`` shape) with ``payment.amount`` and refund amounts exact."""
    out = dict(body)
    if isinstance(out.get("payment"), Mapping):
        out["payment"] = with_money(out["payment"], "amount")
    if isinstance(out.get("refunds"), list):
        out["refunds"] = [
            with_money(r, "pixRefundAmount") if isinstance(r, Mapping) else r
            for r in out["refunds"]
        ]
    return out


def _whole(value: Any) -> int | None:
    """A whole number, also when sent as a string of digits."""
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return whole_number(value)


def _next_page(meta: Mapping[str, Any], page: int, count: int, per_page: int) -> int | None:
    if "nextPage" in meta:
        following = _whole(meta["nextPage"])
        if following is None:
            return None  # an explicit null: this was the last page
    elif (last := _whole(meta.get("lastPage"))) is not None:
        following = page + 1 if page < last else None
    else:
        # No usable paging data: only a short page is known to be the last.
        following = page + 1 if count >= per_page else None
    if following is not None and following <= page:
        # A provider bug would otherwise loop forever.
        raise InvalidResponse(f"nextPage {following} does not advance from {page}", status=200)
    return following


def walk_pages(
    get_json: GetJson, path: str, params: Mapping[str, str | int], per_page: int
) -> Iterator[dict[str, Any]]:
    """Every item of a ``{meta, data}`` list, fetched page by page (from 1) to the last.

    Lazy: errors surface from the loop. An item added during the walk can shift pages
    and appear twice; callers dedupe by the item's id (the inbox does, by unique key).

    A walk that cannot be whole fails (``InvalidResponse``) rather than ending quietly, as
    the BCB lists' walk does: a page without its list, the page the provider says it sent
    not the one asked for (``currentPage``), an empty page with more to follow, fewer
    items walked than the provider counts (``total``). A statement cut short would
    otherwise close the day at the balance its last line read said, and the lines left
    out would be money nobody ever saw.
    """
    query: dict[str, str | int] = {**params, "perPage": per_page}
    page = 1
    walked = 0
    counted: int | None = None
    while True:
        query["page"] = page
        body = get_json(path, query)
        items = body.get("data")
        if items is None:
            # A page without its list is no empty page: read as one, a statement nobody
            # could read would say that nothing moved.
            raise InvalidResponse(f"GET {path}: the page has no 'data' list", status=200)
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise InvalidResponse(f"GET {path}: 'data' is not a list of objects", status=200)
        walked += len(items)
        yield from items
        meta = body.get("meta")
        meta = meta if isinstance(meta, dict) else {}
        current = _whole(meta.get("currentPage"))
        if current is not None and current != page:
            raise InvalidResponse(
                f"GET {path}: page {page} came back as page {current}", status=200
            )
        counted = total if (total := _whole(meta.get("total"))) is not None else counted
        following = _next_page(meta, page, len(items), per_page)
        if following is not None and not items:
            raise InvalidResponse(
                f"GET {path}: page {page} is empty, and page {following} is said to follow",
                status=200,
            )
        if following is None:
            if counted is not None and walked < counted:
                raise InvalidResponse(
                    f"GET {path}: {walked} items on its {page} pages, of the {counted} it counts",
                    status=200,
                )
            return
        page = following
