"""The BCB list queries (``GET /pix``, ``/cob``, ``/cobv``, ``/rec``, ``/cobr``): a time
window in RFC 3339 and ``paginacao`` walked to the last page."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Final

from reconcile.provider.errors import InvalidResponse
from reconcile.provider.transport import ApiTransport

MAX_PAGE_SIZE: Final = 1000


def rfc3339(value: datetime, names: str = "inicio/fim") -> str:
    """``value`` in UTC with milliseconds; ``names`` are the parameters, for the error."""
    if value.tzinfo is None:
        raise ValueError(f"{names} must be timezone-aware")
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def window(
    inicio: datetime, fim: datetime, page_size: int, filters: Mapping[str, str | bool | None]
) -> dict[str, str | int]:
    """Query parameters for ``inicio <= t <= fim``; ``None`` filters are left out."""
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise ValueError(f"page_size must be between 1 and {MAX_PAGE_SIZE}")
    params: dict[str, str | int] = {"inicio": rfc3339(inicio), "fim": rfc3339(fim)}
    if fim < inicio:
        raise ValueError("fim is before inicio")
    for name, value in filters.items():
        if isinstance(value, bool):
            params[name] = "true" if value else "false"
        elif value is not None:
            params[name] = value
    params["paginacao.itensPorPagina"] = page_size
    return params


def whole_number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, Decimal) and value == value.to_integral_value():
        return int(value)
    return None


def walk_pages(
    api: ApiTransport, path: str, key: str, params: Mapping[str, str | int]
) -> Iterator[dict[str, Any]]:
    """Every item under ``key`` on every page, fetched lazily while iterating.

    Items created during the walk can shift pages and appear twice; callers dedupe by
    the item's identity (the inbox does, by its unique key).
    """
    query = dict(params)
    page_size = int(query["paginacao.itensPorPagina"])
    page = 0
    while True:
        query["paginacao.paginaAtual"] = page
        body = api.get_json(path, query)
        items = body.get(key) or []
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise InvalidResponse(f"GET {path}: '{key}' is not a list of objects", status=200)
        yield from items
        if not items:
            return
        parametros = body.get("parametros")
        paginacao = parametros.get("paginacao") if isinstance(parametros, dict) else None
        pages = (
            whole_number(paginacao.get("quantidadeDePaginas"))
            if isinstance(paginacao, dict)
            else None
        )
        if pages is None:
            # No usable paging data: a short page can only be the last one.
            if len(items) < page_size:
                return
        elif page + 1 >= pages:
            return
        page += 1
