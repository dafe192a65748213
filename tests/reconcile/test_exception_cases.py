"""Exceptions people can act on: each names the references a person knows it by (txid,
endToEndId, the payer masked, what the charge asked of the payer), how long it has been
seen, and a lifecycle across business days that does not change with the day it is asked
— on SQLite and PostgreSQL, through the real inbox and handlers (``DayBook``)."""

from __future__ import annotations

import json
from datetime import date, timedelta
from typing import Any

from rich.console import Console
from sqlalchemy import Engine

from pixrecon.report import exceptions_table
from reconcile.cases import EXCEPTION_FIELDS, case_rows, set_state
from reconcile.db import session_scope
from reconcile.models import CaseState
from reconcile.nightly import NightlyResult, reconcile_day
from reconcile.timeutil import business_day_bounds
from tests.reconcile.day_book import DayBook

FIRST = date(2026, 3, 10)
CPF = "12345678901"
NAME = "Maria Aparecida Souza"


def _after(day: date) -> Any:
    return business_day_bounds(day)[1] + timedelta(hours=2)


def _by_status(result: NightlyResult) -> dict[str, dict[str, Any]]:
    return {row["status"]: row for row in result.report["exceptions"]}


def _overpaid_charge(book: DayBook) -> str:
    txid = "cobpedido4711overpaid000000001"
    book.charge(
        "cob",
        txid,
        5_000,
        "08:00",
        expiracao=86_400,
        extra={
            "solicitacaoPagador": "Pedido 4711",
            "devedor": {"cpf": CPF, "nome": NAME},
        },
    )
    e2e = book.pix(5_500, "09:00", txid=txid, payer={"cpf": CPF, "nome": NAME}, info="obrigado")
    book.line("PIX_RECEIVED", 5_500, "09:00", credit=True, endToEndId=e2e)
    return e2e


def test_an_exception_names_what_finance_recognises_and_masks_the_payer(engine: Engine) -> None:
    book = DayBook(engine, FIRST)
    e2e = _overpaid_charge(book)
    book.confirm_all_pix()
    result = reconcile_day(engine, FIRST, now=_after(FIRST))
    overpaid = _by_status(result)["overpaid"]
    assert list(overpaid) == list(EXCEPTION_FIELDS)
    assert overpaid["ref"] == "cob:cobpedido4711overpaid000000001"
    assert overpaid["txid"] == "cobpedido4711overpaid000000001"
    assert overpaid["end_to_end_id"] == e2e
    assert overpaid["payer_request"] == "Pedido 4711"
    assert (overpaid["expected_cents"], overpaid["actual_cents"]) == (5_000, 5_500)
    assert overpaid["differs"] == "amount"
    assert "refund the R$ 5,00 paid over the R$ 50,00 due" in overpaid["action"]
    # Personal data never leaves unmasked: not in the row, not anywhere in the report.
    assert overpaid["payer_document"] == "*********01"
    assert overpaid["payer_name"] == "M**** A******** S****"
    dumped = json.dumps(result.report)
    assert CPF not in dumped
    assert "Aparecida" not in dumped
    assert (overpaid["lifecycle"], overpaid["age_days"]) == ("new", 0)
    assert overpaid["first_seen"] == FIRST.isoformat()


def test_a_refund_exception_names_the_refunded_pix_and_its_payer(engine: Engine) -> None:
    book = DayBook(engine, FIRST)
    e2e = book.pix(
        8_000,
        "10:00",
        payer={"cnpj": "11222333000181", "nome": "Loja Exemplo"},
        refunds=[
            {
                "id": "devolucao-1",
                "rtrId": "D99999999202603101000abcdefghij1",
                "valor": "20.00",
                "status": "DEVOLVIDO",
                "horario": {"solicitacao": book.at("11:00").isoformat()},
            }
        ],
    )
    book.confirm_all_pix()
    # The API stands behind the refund; the statement never booked it: an exception.
    book.confirm_all_refunds()
    book.line("PIX_RECEIVED", 8_000, "10:00", credit=True, endToEndId=e2e)
    result = reconcile_day(engine, FIRST, now=_after(FIRST))
    refund = next(row for row in result.report["exceptions"] if row["ref"].startswith("D99999999"))
    assert refund["end_to_end_id"] == e2e
    assert refund["payer_document"] == "************81"
    assert refund["payer_name"] == "L*** E******"


def test_a_document_the_payer_typed_is_masked_in_every_printed_form(engine: Engine) -> None:
    # infoPagador is free text: a payer writes their CPF there as often as anywhere.
    book = DayBook(engine, FIRST)
    e2e = book.pix(8_000, "10:00", info="meu CPF 123.456.789-09, pedido 77")
    book.confirm_all_pix()
    book.line("PIX_RECEIVED", 9_000, "10:00", credit=True, endToEndId=e2e)
    result = reconcile_day(engine, FIRST, now=_after(FIRST))
    row = next(r for r in result.report["exceptions"] if r["ref"] == e2e)
    assert row["payer_request"] == "meu CPF *********09, pedido 77"
    console = Console(record=True, width=200)
    console.print(exceptions_table(result.report["exceptions"]))
    printed = console.export_text() + json.dumps(result.report)
    assert "123.456.789" not in printed
    assert "*********09" in printed


def _open_med_case(book: DayBook, disputed: str) -> None:
    book.infraction(
        {
            "id": "med-still-open",
            "status": "OPEN",
            "amount": "80.00",
            "endToEndId": disputed,
            "createdAt": book.at("10:00").isoformat(),
        }
    )


def _open_case(result: NightlyResult) -> dict[str, Any]:
    return next(r for r in result.report["exceptions"] if r["ref"] == "med-still-open")


def test_a_problem_seen_again_on_later_days_is_persisting_whenever_it_is_asked(
    engine: Engine,
) -> None:
    first = DayBook(engine, FIRST)
    disputed = first.pix(8_000, "09:00", payer={"cpf": CPF, "nome": NAME})
    first.confirm_all_pix()
    first.line("PIX_RECEIVED", 8_000, "09:00", credit=True, endToEndId=disputed)
    _open_med_case(first, disputed)
    day1 = reconcile_day(engine, FIRST, now=_after(FIRST))
    third_day = FIRST + timedelta(days=2)
    day3 = reconcile_day(engine, third_day, now=_after(third_day))
    seen_first, seen_third = _open_case(day1), _open_case(day3)
    assert (seen_first["lifecycle"], seen_first["age_days"]) == ("new", 0)
    assert (seen_third["lifecycle"], seen_third["age_days"]) == ("persisting", 2)
    assert seen_third["first_seen"] == FIRST.isoformat()
    assert seen_third["case_id"] != seen_first["case_id"]
    assert seen_third["end_to_end_id"] == disputed
    assert seen_third["payer_document"] == "*********01"

    # The third day re-run a month later, and the day between run only now: its answer
    # is the day's own, whatever was run since.
    later = reconcile_day(engine, third_day, now=_after(third_day) + timedelta(days=31))
    assert {k: v for k, v in later.report.items() if k != "run_id"} == {
        k: v for k, v in day3.report.items() if k != "run_id"
    }
    assert _open_case(later)["case_id"] == seen_third["case_id"], "a case keeps its id"

    # Resolved by a person: the listing says so, and a re-run keeps it resolved.
    with session_scope(engine) as session:
        set_state(session, seen_first["case_id"], CaseState.RESOLVED, "answered the MED")
    again = reconcile_day(engine, FIRST, now=_after(FIRST) + timedelta(days=3))
    # A resolved case is explained, not agreement: the day's answer is the same.
    assert (again.verdict, again.exit_code) == (day1.verdict, day1.exit_code)
    assert again.verdict.value == "breaks"
    assert (again.report["open_exceptions"], again.report["exceptions_found"]) == (0, 1)
    with session_scope(engine) as session:
        rows = case_rows(session, day=FIRST, states=tuple(CaseState))
    resolved = next(r for r in rows if r["ref"] == "med-still-open")
    assert (resolved["state"], resolved["lifecycle"]) == ("resolved", "resolved")
    assert resolved["note"] == "answered the MED"
    with session_scope(engine) as session:
        ages = case_rows(session, day=third_day, as_of=third_day + timedelta(days=5))
    assert next(r for r in ages if r["ref"] == "med-still-open")["age_days"] == 7


def test_a_case_closed_later_without_its_closing_time_is_open_on_its_first_day(
    engine: Engine,
) -> None:
    """The notification of a closed case need not say when it closed (``closedAt``): its
    first day still ended with it open, whenever that day is asked again."""
    first = DayBook(engine, FIRST)
    disputed = first.pix(8_000, "09:00")
    first.confirm_all_pix()
    first.line("PIX_RECEIVED", 8_000, "09:00", credit=True, endToEndId=disputed)
    _open_med_case(first, disputed)
    before = reconcile_day(engine, FIRST, now=_after(FIRST))
    assert _open_case(before)["status"] == "open_case"
    # Closed since, heard of now: no closedAt, only the opening time.
    first.infraction(
        {
            "id": "med-still-open",
            "status": "CLOSED",
            "amount": "80.00",
            "endToEndId": disputed,
            "createdAt": first.at("10:00").isoformat(),
        }
    )
    again = reconcile_day(engine, FIRST, now=_after(FIRST) + timedelta(days=1))
    assert {k: v for k, v in again.report.items() if k != "run_id"} == {
        k: v for k, v in before.report.items() if k != "run_id"
    }


def test_a_cleared_case_still_says_how_much_and_why(engine: Engine) -> None:
    """Raised by one run, cleared by the next (whose verdicts no longer hold it, and the
    first run's are pruned): the case still shows the amounts and the reason it had."""
    book = DayBook(engine, FIRST)
    e2e = book.pix(4_200, "10:00")
    book.confirm_all_pix()
    first = reconcile_day(engine, FIRST, now=_after(FIRST))
    (raised,) = [row for row in first.report["exceptions"] if row["end_to_end_id"] == e2e]
    book.line("PIX_RECEIVED", 4_200, "10:00", credit=True, endToEndId=e2e)
    second = reconcile_day(engine, FIRST, now=_after(FIRST) + timedelta(hours=1))
    assert not [row for row in second.report["exceptions"] if row["end_to_end_id"] == e2e]
    with session_scope(engine) as session:
        (cleared,) = case_rows(session, day=FIRST, states=(CaseState.CLEARED,))
    assert cleared["state"] == "cleared"
    assert (cleared["reason"], cleared["expected_cents"], cleared["actual_cents"]) == (
        raised["reason"],
        raised["expected_cents"],
        raised["actual_cents"],
    )
    assert cleared["reason"]
    assert "R$ 42,00" in cleared["action"]
