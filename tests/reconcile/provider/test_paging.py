"""Walking a BCB list (``GET /pix``, ``/cob`` …) to its last page: a walk the provider's
answers cannot make whole fails (``InvalidResponse``: the day is then incomplete) instead
of ending quietly, which would read as "nothing more happened" and turn the money left
out into money nobody notified."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from reconcile.provider.errors import InvalidResponse
from reconcile.provider.paging import walk_pages, window
from reconcile.provider.transport import ApiTransport

ITEMS = [{"endToEndId": f"E{n}"} for n in range(7)]
Page = Callable[[int, int], dict[str, Any]]


def _honest(page: int, size: int) -> dict[str, Any]:
    total = len(ITEMS)
    return {
        "parametros": {
            "paginacao": {
                "paginaAtual": page,
                "itensPorPagina": size,
                "quantidadeDePaginas": max(1, -(-total // size)),
                "quantidadeTotalDeItens": total,
            }
        },
        "pix": ITEMS[page * size : (page + 1) * size],
    }


class _Provider:
    """Answers each page with ``answer(page, size)``: 2 items a page, whatever was asked."""

    def __init__(self, answer: Page) -> None:
        self.answer = answer
        self.asked: list[int] = []

    def get_json(self, path: str, query: Mapping[str, Any]) -> dict[str, Any]:
        page = int(query["paginacao.paginaAtual"])
        self.asked.append(page)
        return self.answer(page, 2)


def _walk(answer: Page) -> list[dict[str, Any]]:
    start = datetime(2026, 3, 2, 3, tzinfo=UTC)
    params = window(start, start.replace(day=3), 2, {})
    provider = _Provider(answer)
    return list(walk_pages(cast(ApiTransport, provider), "/pix", "pix", params))


def test_an_honest_walk_reads_every_item_once() -> None:
    assert _walk(_honest) == ITEMS


def _changed(**changes: Any) -> Page:
    def answer(page: int, size: int) -> dict[str, Any]:
        body = _honest(page, size)
        for name, value in changes.items():
            if name == "pix" and page == 1:
                body["pix"] = value
            elif name != "pix":
                body["parametros"]["paginacao"][name] = value
        return body

    return answer


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (_changed(pix=[]), "page 1 is empty, and 4 pages are counted"),
        (_changed(pix=None), "the page has no 'pix' list"),
        (_changed(paginaAtual=0), "page 1 came back as page 0"),
        (_changed(quantidadeDePaginas=2), "counts 2 pages of 2 for 7 items"),
        (
            lambda page, size: (
                {**_honest(page, size), "pix": ITEMS[:1]}
                if page == 3
                else {
                    **_honest(page, size),
                    "pix": ITEMS[page * size : page * size + 1],
                }
            ),
            "4 items on its 4 pages, of the 7 it counts",
        ),
        (lambda page, size: {}, "the page has no 'pix' list"),
    ],
    ids=["empty-page", "no-list", "wrong-page", "too-few-pages", "short-pages", "empty-body"],
)
def test_a_walk_that_cannot_be_whole_fails(answer: Page, says: str) -> None:
    with pytest.raises(InvalidResponse) as raised:
        _walk(answer)
    assert says in str(raised.value)


def test_an_empty_listing_is_read_as_empty_when_the_provider_counts_none() -> None:
    def none(page: int, size: int) -> dict[str, Any]:
        paginacao = {"paginaAtual": 0, "itensPorPagina": size, "quantidadeDePaginas": 1}
        return {"parametros": {"paginacao": {**paginacao, "quantidadeTotalDeItens": 0}}}

    assert _walk(none) == []
    assert _walk(lambda page, size: {"pix": []}) == []
