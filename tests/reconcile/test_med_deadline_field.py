"""An open MED case carries its analysis deadline as a field, as money that may go back
carries ``refund_by``, and what to do says how much of it the provider already blocked;
a rejected Pix Automático debit says why in words, its code beside them."""

from __future__ import annotations

from datetime import datetime, timedelta

from rich.console import Console
from sqlalchemy import Engine

from pixrecon.report import exceptions_table
from reconcile.cases import EXCEPTION_FIELDS, case_rows
from reconcile.db import session_scope
from reconcile.exports.exceptions import exception_table
from reconcile.nightly import reconcile_day
from reconcile.rejections import rejection_in_words
from reconcile.timeutil import BUSINESS_TZ
from tests.reconcile.day_book import DayBook, verdicts_of
from tests.reconcile.test_day_verdict import AFTER, PAST, _clean_day


def _med_day(engine: Engine) -> datetime:
    book = DayBook(engine, PAST)
    _clean_day(book)
    deadline = book.at("18:00", PAST + timedelta(days=6))
    book.infraction(
        {
            "id": "med-held",
            "status": "OPEN",
            "amount": "80.00",
            "blockedAmount": "50.00",
            "createdAt": book.at("10:00").isoformat(),
            "analysisDeadline": deadline.isoformat(),
        }
    )
    book.confirm_all_infractions()
    return deadline


def test_an_open_med_case_lists_its_deadline_and_what_is_blocked(engine: Engine) -> None:
    deadline = _med_day(engine)
    result = reconcile_day(engine, PAST, now=AFTER)
    (case,) = [e for e in result.report["exceptions"] if e["ref"] == "med-held"]
    assert datetime.fromisoformat(case["med_deadline_at"]) == deadline
    assert case["refund_by"] is None
    assert case["action"] == (
        "answer the MED case by 16/03/2026 18:00: R$ 80,00 may be debited "
        "(R$ 50,00 of it already blocked in the account)"
    )
    # Other exceptions have no deadline of that kind.
    assert all(e["med_deadline_at"] is None for e in result.report["exceptions"] if e != case)

    # The work queue, as of a day after the deadline: the line says it has passed.
    with session_scope(engine) as session:
        rows = case_rows(session, day=PAST, as_of=PAST + timedelta(days=7))
    console = Console(width=100, record=True)
    console.print(exceptions_table(rows, today=PAST + timedelta(days=7)))
    text = " ".join(console.export_text().split())
    assert "MED analysis deadline 16/03/2026 18:00 — passed" in text
    assert "may have been debited (R$ 50,00 of" in text
    wide = Console(width=5000, record=True)
    wide.print(exceptions_table(rows, wide=True))
    assert "MED deadline" in wide.export_text()


def test_the_exceptions_export_adds_the_deadline_after_its_columns(engine: Engine) -> None:
    deadline = _med_day(engine)
    reconcile_day(engine, PAST, now=AFTER)
    table = exception_table(engine, PAST)
    # Existing columns keep their places; the new one comes last.
    assert table.columns[-2:] == ("note", "med_deadline_at")
    assert EXCEPTION_FIELDS[-1] == "med_deadline_at"
    rows = {row["ref"]: row for row in table.rows}
    assert rows["med-held"]["med_deadline_at"] == deadline.astimezone(BUSINESS_TZ)


def test_a_rejection_code_is_said_in_words_with_the_code_kept(engine: Engine) -> None:
    assert rejection_in_words("AC06") == "the payer's account is blocked (AC06)"
    assert rejection_in_words("AM02") == (
        "the amount is over the maximum the payer set for the recurrence (AM02)"
    )
    assert "(ZZ99;" in rejection_in_words("ZZ99")
    book = DayBook(engine, PAST)
    _clean_day(book)
    book.charge(
        "cobr",
        "cobrblocked00000000000000001",
        3_000,
        "06:00",
        status="REJEITADA",
        extra={
            "politicaRetentativa": "NAO_PERMITE",
            "tentativas": [
                {
                    "status": "REJEITADA",
                    "dataLiquidacao": PAST.isoformat(),
                    "rejeicao": {"codigo": "AC06"},
                }
            ],
            "encerramento": {"rejeicao": {"codigo": "AC06"}},
        },
        dataDeVencimento=PAST.isoformat(),
    )
    result = reconcile_day(engine, PAST, now=AFTER)
    rejected = verdicts_of(engine, result)[("charge", "cobr:cobrblocked00000000000000001")]
    assert rejected.reason.startswith(
        "the payer's bank rejected the debit: the payer's account is blocked (AC06)"
    )
