"""A notified Pix whose amount could not be read is kept, counts no money, and is matched
once the API has stated its amount (docs/design.md §4: money whose amount could not be
read exactly counts only once the API has confirmed it)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, select, update

from reconcile.confirmation import confirm_pending_pix
from reconcile.db import session_scope
from reconcile.inbox import store_items
from reconcile.matching.judgement import DayVerdict
from reconcile.models import PixReceived, Source
from reconcile.nightly import reconcile_day
from reconcile.payloads.pix import pix_callback_items
from reconcile.processing import process_items
from tests.factories import e2e_id
from tests.reconcile.day_book import DayBook, verdicts_of
from tests.reconcile.test_day_verdict import AFTER, PAST


class _Api:
    def get_pix(self, e2eid: str) -> dict[str, Any]:
        return {"endToEndId": e2eid, "valor": "150.00"}


def _pix_received(result: Any) -> dict[str, Any]:
    (row,) = [r for r in result.report["bridge"]["categories"] if r["category"] == "pix_received"]
    return dict(row)


def test_it_counts_nothing_until_the_api_states_its_amount(engine: Engine) -> None:
    book = DayBook(engine, PAST)
    e2e = e2e_id(77)
    # An amount nested the way the charge's valor is, rather than the Pix's.
    when = book.at("10:00").isoformat()
    raw = {"endToEndId": e2e, "valor": {"original": "150.00"}, "horario": when}
    with session_scope(engine) as session:
        new = store_items(session, pix_callback_items(raw), source=Source.WEBHOOK).new_ids
    assert process_items(engine, new).processed == new
    book.line("PIX_RECEIVED", 15_000, "10:00", credit=True, endToEndId=e2e)

    waiting = reconcile_day(engine, PAST, now=AFTER)
    verdict = verdicts_of(engine, waiting)[("movement", e2e)]
    assert (verdict.status, verdict.actual_cents) == ("pending", None)
    assert waiting.verdict is DayVerdict.RECONCILED_WITH_PENDING
    row = _pix_received(waiting)
    assert (row["webhook_cents"], row["api_cents"], row["statement_cents"]) == (0, 0, 15_000)

    with session_scope(engine) as session:
        session.execute(update(PixReceived).values(next_check_at=PixReceived.created_at))
    assert confirm_pending_pix(engine, _Api(), grace=timedelta(minutes=15)).confirmed
    with session_scope(engine) as session:
        stored = session.execute(select(PixReceived)).scalar_one()
    assert (stored.amount_cents, stored.confirmation) == (15_000, "confirmed")

    settled = reconcile_day(engine, PAST, now=AFTER)
    assert verdicts_of(engine, settled)[("movement", e2e)].status == "matched"
    assert settled.verdict is DayVerdict.RECONCILED
    row = _pix_received(settled)
    assert (row["webhook_cents"], row["api_cents"], row["difference_cents"]) == (15_000, 15_000, 0)


class _Broken:
    """A provider answering 200 with a body about no Pix, or another one."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer

    def get_pix(self, e2eid: str) -> dict[str, Any]:
        return self.answer


@pytest.mark.parametrize(
    "answer",
    [{}, {"endToEndId": e2e_id(5), "valor": "500.00"}, {"endToEndId": e2e_id(78)}],
    ids=["empty", "another-pix", "no-valor"],
)
def test_an_answer_about_no_pix_confirms_nothing(engine: Engine, answer: dict[str, Any]) -> None:
    """A forged notification of R$ 500,00: a 200 that does not speak of that Pix is no
    confirmation; the row waits, and its money never counts."""
    book = DayBook(engine, PAST)
    e2e = e2e_id(78)
    raw = {"endToEndId": e2e, "valor": "500.00", "horario": book.at("10:00").isoformat()}
    with session_scope(engine) as session:
        new = store_items(session, pix_callback_items(raw), source=Source.WEBHOOK).new_ids
    process_items(engine, new)
    report = confirm_pending_pix(engine, _Broken(answer), grace=timedelta(0))
    assert report.confirmed == []
    with session_scope(engine) as session:
        stored = session.execute(select(PixReceived)).scalar_one()
    assert (stored.confirmation, stored.confirmed_amount_cents) == ("pending", None)
    judged = reconcile_day(engine, PAST, now=AFTER)
    assert _pix_received(judged)["api_cents"] == 0
    assert verdicts_of(engine, judged)[("movement", e2e)].status == "pending"
