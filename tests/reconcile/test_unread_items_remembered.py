"""An item a listing sent that could not be read leaves its day incomplete for every run of
it, whichever read skipped it (docs/design.md §5): the workers' periodic polls and
``reconcile``'s own fetch alike, until a later read over its time reads it whole. The
polls go through the real list walks, inbox and handlers; only the provider's answers are
canned."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import Engine

from reconcile.matching.judgement import DayVerdict
from reconcile.nightly import NightlyResult, reconcile_day
from reconcile.polling.day import Family, fetch_window, sources_of
from reconcile.polling.qrcode import poll_charges, poll_received_pix
from reconcile.processing import process_items
from reconcile.timeutil import business_day_bounds
from tests.conftest import make_settings
from tests.reconcile.day_book import DayBook
from tests.reconcile.test_day_verdict import AFTER, PAST
from tests.reconcile.test_statement_read_whole import (
    _Accounts,
    _lines,
    _nightly,
    _notified_payout,
    _page,
    _Providers,
)

START, END = business_day_bounds(PAST)


def _poll_statement(
    engine: Engine, pages: list[dict[str, Any]], start: datetime, end: datetime
) -> None:
    """The workers' periodic accounts poll over [start, end]."""
    fetch_window(
        engine,
        _Providers(_Accounts(pages)),
        start,
        end,
        families=(Family.ACCOUNTS,),
        on_new=lambda ids: process_items(engine, ids),
    )


def _run(engine: Engine, *, polled: bool) -> NightlyResult:
    """A run that fetches nothing: ``--no-poll`` (``polled=False``), or the workers' run
    with a current accounts poll (``polled=True``)."""
    settings = make_settings(engine.url.render_as_string(hide_password=False))
    providers = _Providers(_Accounts([]))
    sources = sources_of(providers, settings, statement_polled=polled)
    return reconcile_day(engine, PAST, now=AFTER, sources=sources)


def _only_page(line: dict[str, Any] | None) -> dict[str, Any]:
    lines = [] if line is None else [line]
    return {"meta": {"total": len(lines), "currentPage": 1, "nextPage": None}, "data": lines}


@pytest.mark.parametrize(
    ("unreadable", "named"),
    [({"amount": "-1.00"}, "line-fee (/amount: "), ({"id": ""}, "without a readable id (/id: ")],
)
def test_a_line_a_periodic_poll_skipped_leaves_every_run_of_its_day_incomplete(
    engine: Engine, unreadable: dict[str, Any], named: str
) -> None:
    book = _notified_payout(engine)
    payout, fee = _lines(book)
    _poll_statement(engine, [_page(1, payout), _page(2, {**fee, **unreadable})], START, END)
    for polled in (False, True):
        result = _run(engine, polled=polled)
        assert result.verdict is DayVerdict.INCOMPLETE, result.report
        assert result.exit_code == 2
        (because,) = result.report["incomplete_because"]
        assert because.startswith("1 statement line the accounts API sent could not be read")
        assert named in because
        assert "-1.00" not in because
        assert "`pixrecon reconcile --date 2026-03-10` (without --no-poll)" in because
    # A poll after the line's time reads nothing of it: the day stays as it was.
    _poll_statement(engine, [_only_page(None)], book.at("16:00"), book.at("17:00"))
    assert _run(engine, polled=True).verdict is DayVerdict.INCOMPLETE
    # The day fetched again, the line read whole: nothing is left out any more.
    result = _nightly(engine, PAST, [_page(1, payout), _page(2, fee)])
    assert result.verdict is DayVerdict.RECONCILED, result.report
    assert _run(engine, polled=False).verdict is DayVerdict.RECONCILED


def test_a_line_whose_time_cannot_be_read_holds_the_window_it_was_listed_in(
    engine: Engine,
) -> None:
    """No time to place it by: only a read over the whole of the window the poll read it
    in says it is gone; a later window overlapping part of it does not."""
    book = _notified_payout(engine)
    payout, fee = _lines(book)
    assert _nightly(engine, PAST, [_page(1, payout), _page(2, fee)]).verdict is (
        DayVerdict.RECONCILED
    )
    stray = {**fee, "id": "line-stray", "amount": "-1.00", "createdAt": "?"}
    _poll_statement(engine, [_only_page(stray)], book.at("14:00"), book.at("16:00"))
    assert _run(engine, polled=True).verdict is DayVerdict.INCOMPLETE
    _poll_statement(engine, [_only_page(None)], book.at("15:00"), book.at("17:00"))
    assert _run(engine, polled=True).verdict is DayVerdict.INCOMPLETE
    _poll_statement(engine, [_page(1, payout), _page(2, fee)], START, END)
    assert _run(engine, polled=True).verdict is DayVerdict.RECONCILED


class _QrCode:
    """The QR code API's listings, each serving ``listed`` under its own name."""

    def __init__(self, listing: str, listed: list[dict[str, Any]]) -> None:
        self.listing, self.listed = listing, listed

    def _serve(self, name: str) -> Iterator[dict[str, Any]]:
        return iter(self.listed if name == self.listing else ())

    def list_received_pix(self, *_window: Any, page_size: int = 0) -> Iterator[dict[str, Any]]:
        return self._serve("pix")

    def list_cobs(self, *_window: Any) -> Iterator[dict[str, Any]]:
        return self._serve("cob")

    def list_cobvs(self, *_window: Any) -> Iterator[dict[str, Any]]:
        return self._serve("cobv")

    def list_cobrs(self, *_window: Any) -> Iterator[dict[str, Any]]:
        return self._serve("cobr")

    def list_recs(self, *_window: Any) -> Iterator[dict[str, Any]]:
        return self._serve("rec")


def _unreadable(listing: str, book: DayBook) -> dict[str, Any]:
    if listing == "pix":
        # No endToEndId: the Pix cannot be stored, and its R$ 25,00 would be in no total.
        return {"endToEndId": "", "horario": book.at("12:00").isoformat(), "valor": "25.00"}
    return {
        "txid": "cobwithanunreadableamount0001",
        "status": "ATIVA",
        "calendario": {"criacao": book.at("12:00").isoformat(), "expiracao": 3_600},
        "valor": {"original": "vinte e cinco"},
    }


@pytest.mark.parametrize(
    ("listing", "said"),
    [
        ("pix", "1 Pix received the QR code API listed (GET /pix) could not be read"),
        ("cob", "1 charge (cob) the QR code API listed (GET /cob) could not be read"),
    ],
)
def test_an_item_the_qr_code_api_listed_that_cannot_be_read_leaves_the_day_incomplete(
    engine: Engine, listing: str, said: str
) -> None:
    book = _notified_payout(engine)
    payout, fee = _lines(book)
    assert _nightly(engine, PAST, [_page(1, payout), _page(2, fee)]).verdict is (
        DayVerdict.RECONCILED
    )
    api = _QrCode(listing, [_unreadable(listing, book)])
    poll = poll_received_pix if listing == "pix" else poll_charges
    poll(api, engine, START, END)
    result = _run(engine, polled=True)
    assert result.verdict is DayVerdict.INCOMPLETE, result.report
    (because,) = result.report["incomplete_because"]
    assert because.startswith(said)
    assert "the listing was not read whole" in because
    # Listed again, read whole (here: no longer listed), the day stands as it was read.
    poll(_QrCode(listing, []), engine, START, END)
    assert _run(engine, polled=True).verdict is DayVerdict.RECONCILED
