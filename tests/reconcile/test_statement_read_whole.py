"""A day is "all reconciled" only when its statement was read whole (docs/design.md §5).
The statement's last lines read close the bridge: a line left out — on a page the provider
did not serve whole, or one it sent that cannot be read — would leave a day adding up
without it. The nightly fetch goes through the real accounts list walk and inbox; only
the provider's answers are canned."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import Engine

from reconcile.matching.judgement import DayVerdict
from reconcile.nightly import NightlyResult, reconcile_day
from reconcile.polling.day import fetch_day, sources_of
from reconcile.processing import process_items
from reconcile.provider.accounts_shapes import walk_pages, with_money
from reconcile.provider.errors import InvalidResponse, NotFound
from tests.conftest import make_settings
from tests.reconcile.day_book import DayBook
from tests.reconcile.test_day_verdict import AFTER, PAST


class _Accounts:
    """The accounts API of a quiet afternoon: one payout of R$ 50,00, settled, and a fee
    of R$ 1,00; the statement served as ``pages`` (one line a page)."""

    def __init__(self, pages: list[dict[str, Any]]) -> None:
        self.pages = pages

    def get_payment_by_key(self, key: str) -> dict[str, Any]:
        return {"status": "LIQUIDATED", "idempotencyKey": key, "payment": {"amount": "50.00"}}

    def get_payment(self, end_to_end_id: str) -> dict[str, Any]:
        raise NotFound(end_to_end_id)

    def get_balance(self) -> Decimal:
        return Decimal("949.00")

    def iter_invoices(self) -> Iterator[dict[str, Any]]:
        return iter(())

    def iter_infractions(self, **_window: Any) -> Iterator[dict[str, Any]]:
        return iter(())

    def get_infraction(self, infraction_id: str) -> dict[str, Any]:
        raise NotFound(infraction_id)

    def iter_statement(self, start: Any, end: Any) -> Iterator[dict[str, Any]]:
        pages = iter(self.pages)
        for line in walk_pages(lambda _path, _query: next(pages), "/accounts/statement", {}, 1):
            yield with_money(line, "amount", "balanceAfter")


class _Providers:
    qrcode = None

    def __init__(self, accounts: _Accounts) -> None:
        self.accounts = accounts


def _page(number: int, line: dict[str, Any] | None) -> dict[str, Any]:
    meta = {
        "total": 2,
        "currentPage": number,
        "lastPage": 2,
        "nextPage": 2 if number == 1 else None,
    }
    return {"meta": meta, "data": [] if line is None else [line]}


def _lines(book: DayBook) -> tuple[dict[str, Any], dict[str, Any]]:
    payout = {
        "id": "line-payout",
        "type": "DEBIT",
        "category": "PIX_PAYMENT",
        "amount": "50.00",
        "balanceAfter": "950.00",
        "createdAt": book.at("11:00").isoformat(),
        "idempotencyKey": "po-1",
    }
    fee = {
        "id": "line-fee",
        "type": "DEBIT",
        "category": "FEE",
        "amount": "1.00",
        "balanceAfter": "949.00",
        "createdAt": book.at("15:00").isoformat(),
    }
    return payout, fee


def _nightly(engine: Engine, day: date, pages: list[dict[str, Any]]) -> NightlyResult:
    """``pixrecon reconcile --date day``: the day fetched, then judged by what was read."""
    settings = make_settings(engine.url.render_as_string(hide_password=False))
    providers = _Providers(_Accounts(pages))
    fetched = fetch_day(
        engine, providers, day, settings, on_new=lambda ids: process_items(engine, ids)
    )
    return reconcile_day(engine, day, now=AFTER, sources=sources_of(providers, settings, fetched))


def _notified_payout(engine: Engine) -> DayBook:
    book = DayBook(engine, PAST)
    book.transfer(book.payout_data("po-1", 5_000, "11:00"))
    return book


def test_the_whole_statement_read_reconciles_the_day(engine: Engine) -> None:
    book = _notified_payout(engine)
    payout, fee = _lines(book)
    result = _nightly(engine, PAST, [_page(1, payout), _page(2, fee)])
    assert result.verdict is DayVerdict.RECONCILED, result.report
    assert result.report["bridge"]["closing_cents"] == 94_900


def test_a_statement_page_served_empty_mid_read_concludes_nothing(engine: Engine) -> None:
    """The fee's page comes back empty: the walk fails (exit 2, nothing concluded), never
    a day closed at R$ 950,00 without the fee."""
    book = _notified_payout(engine)
    payout, _fee = _lines(book)
    with pytest.raises(InvalidResponse, match="1 items on its 2 pages, of the 2 it counts"):
        _nightly(engine, PAST, [_page(1, payout), _page(2, None)])


@pytest.mark.parametrize("unreadable", [{"id": ""}, {"amount": "-1.00"}, {"type": None}])
def test_a_statement_line_that_cannot_be_read_leaves_the_day_incomplete(
    engine: Engine, unreadable: dict[str, Any]
) -> None:
    book = _notified_payout(engine)
    payout, fee = _lines(book)
    result = _nightly(engine, PAST, [_page(1, payout), _page(2, {**fee, **unreadable})])
    assert result.verdict is DayVerdict.INCOMPLETE, result.report
    assert result.exit_code == 2
    (because,) = result.report["incomplete_because"]
    assert because.startswith("1 statement line the accounts API sent could not be read")
