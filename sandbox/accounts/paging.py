"""``page``/``perPage`` query parameters and the ``{meta, data}`` list envelope.

Pages are numbered from 1; a page past the last one is empty, not an error.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final

from starlette.datastructures import QueryParams

from sandbox.accounts.problems import violation
from sandbox.clock import parse_rfc3339

DEFAULT_PER_PAGE: Final = 50
MAX_PER_PAGE: Final = 500


class QueryErrors(list[dict[str, str]]):
    """Violations collected while reading query parameters."""

    def integer(self, params: QueryParams, name: str, default: int, low: int, high: int) -> int:
        raw = params.get(name)
        if raw is None:
            return default
        try:
            value = int(raw)
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            self.append(violation(name, f"must be an integer from {low} to {high}"))
            return default
        return value

    def instant(self, params: QueryParams, name: str, *, required: bool) -> datetime | None:
        raw = params.get(name)
        if raw is None:
            if required:
                self.append(violation(name, "is required"))
            return None
        parsed = parse_rfc3339(raw)
        if parsed is None:
            self.append(violation(name, "must be an RFC 3339 timestamp with an offset"))
        return parsed


def page_params(params: QueryParams, errors: QueryErrors) -> tuple[int, int]:
    page = errors.integer(params, "page", 1, 1, 1_000_000)
    per_page = errors.integer(params, "perPage", DEFAULT_PER_PAGE, 1, MAX_PER_PAGE)
    return page, per_page


def envelope(items: Sequence[Any], page: int, per_page: int) -> dict[str, Any]:
    total = len(items)
    last = max(1, math.ceil(total / per_page))
    return {
        "meta": {
            "total": total,
            "perPage": per_page,
            "currentPage": page,
            "firstPage": 1,
            "lastPage": last,
            "nextPage": page + 1 if page < last else None,
            "prevPage": page - 1 if page > 1 else None,
        },
        "data": list(items[(page - 1) * per_page : page * per_page]),
    }
