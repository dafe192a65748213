"""The BCB list queries (``GET /pix``, ``/cob``, ``/cobv``, ``/rec``, ``/cobr``): a time
window in RFC 3339 and ``paginacao`` walked to the last page."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
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
    the item's identity (the inbox does, by its unique key). A walk that cannot be whole
    fails (``InvalidResponse``) rather than ending quietly: a page without its list, the
    page the provider says it sent not the one asked for, an empty page before the last,
    a page count that cannot hold the items counted, fewer items walked than counted. A
    listing cut short would otherwise read as "nothing more happened" and the money it
    left out as money nobody notified.
    """
    query = dict(params)
    page_size = int(query["paginacao.itensPorPagina"])
    page = 0
    walked = 0
    counted: int | None = None
    while True:
        query["paginacao.paginaAtual"] = page
        body = api.get_json(path, query)
        items = body.get(key)
        paging = _paging(body)
        if items is None:
            if paging is None or paging.total != 0:
                raise InvalidResponse(f"GET {path}: the page has no '{key}' list", status=200)
            items = []
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise InvalidResponse(f"GET {path}: '{key}' is not a list of objects", status=200)
        walked += len(items)
        yield from items
        if paging is None:
            # No usable paging data: only a short page is known to be the last.
            if not items or len(items) < page_size:
                return
            page += 1
            continue
        paging.check(path, page, len(items))
        counted = paging.total if paging.total is not None else counted
        if page + 1 >= paging.pages:
            if counted is not None and walked < counted:
                raise InvalidResponse(
                    f"GET {path}: {walked} items on its {paging.pages} pages, of the "
                    f"{counted} it counts",
                    status=200,
                )
            return
        page += 1


@dataclass(frozen=True)
class _Paging:
    """``parametros.paginacao`` of a page, as the BCB specifies it."""

    current: int | None
    per_page: int | None
    pages: int
    total: int | None

    def check(self, path: str, asked: int, items: int) -> None:
        def invalid(why: str) -> InvalidResponse:
            return InvalidResponse(f"GET {path}: page {asked} {why}", status=200)

        if self.current is not None and self.current != asked:
            raise invalid(f"came back as page {self.current}")
        if self.total is not None and self.per_page and self.pages * self.per_page < self.total:
            raise invalid(f"counts {self.pages} pages of {self.per_page} for {self.total} items")
        if not items and asked + 1 < self.pages:
            raise invalid(f"is empty, and {self.pages} pages are counted")


def _paging(body: Mapping[str, Any]) -> _Paging | None:
    parametros = body.get("parametros")
    paginacao = parametros.get("paginacao") if isinstance(parametros, dict) else None
    if not isinstance(paginacao, dict):
        return None
    pages = whole_number(paginacao.get("quantidadeDePaginas"))
    if pages is None:
        return None
    return _Paging(
        current=whole_number(paginacao.get("paginaAtual")),
        per_page=whole_number(paginacao.get("itensPorPagina")),
        pages=pages,
        total=whole_number(paginacao.get("quantidadeTotalDeItens")),
    )
