"""What people read: Brazilian money and dates, 80 columns without losing a reference,
every field with ``--wide``, and delivery facts apart from money."""

from __future__ import annotations

import io
import json
import re
from datetime import date, timedelta
from pathlib import Path

import pytest
from rich.console import Console
from sqlalchemy import Engine

from pixrecon.report import exceptions_table, print_report, write_json_report
from reconcile.db import session_scope
from reconcile.models import ReconciliationRun
from reconcile.nightly import NightlyResult, reconcile_day
from reconcile.timeutil import business_day_bounds
from tests.cli_support import clean_env, run_pixrecon
from tests.reconcile.day_book import DayBook

DAY = date(2026, 3, 10)
TXID = "cobpedido4711overpaid000000001"
MONEY = re.compile(r"R\$ \d{1,3}(\.\d{3})*,\d{2}")


def _day(engine: Engine) -> tuple[NightlyResult, str]:
    book = DayBook(engine, DAY)
    book.charge(
        "cob",
        TXID,
        123_450,
        "08:00",
        expiracao=86_400,
        extra={"solicitacaoPagador": "Pedido 4711"},
    )
    e2e = book.pix(123_950, "09:00", txid=TXID, payer={"cpf": "12345678901", "nome": "Ana Lima"})
    book.pix(2_000, "09:30")
    book.confirm_all_pix()
    book.line("PIX_RECEIVED", 123_950, "09:00", credit=True, endToEndId=e2e)
    book.line("OTHER", 777, "10:00", credit=True)
    result = reconcile_day(engine, DAY, now=business_day_bounds(DAY)[1] + timedelta(hours=2))
    return result, e2e


def _fits(text: str, width: int = 80) -> None:
    assert "…" not in text, "nothing is truncated"
    too_long = [line for line in text.splitlines() if len(line.rstrip()) > width]
    assert not too_long, too_long


def test_the_report_fits_80_columns_in_brazilian_conventions(engine: Engine) -> None:
    result, _e2e = _day(engine)
    console = Console(width=80, record=True, color_system=None)
    print_report(result, console)
    text = console.export_text()
    _fits(text)
    assert "Reconciliation of 10/03/2026" in text
    assert "R$ 1.234,50" in text
    assert "R$ 1.239,50" in text
    assert not re.search(r"\d+\.\d{2}\b(?!\d)", text.replace("R$", "")), "no dot decimals"
    assert "refund the R$ 5,00 paid over the R$ 1.234,50 due" in text
    assert TXID in text
    assert "Pedido 4711" in text
    # Money first; how deliveries arrived in their own section.
    money, _, deliveries = text.partition("Deliveries (no effect on money)")
    assert deliveries
    assert "duplicate webhooks counted" in deliveries
    assert "found only by polling" in deliveries
    assert "duplicate" not in money.split("Exceptions")[0]


def test_exceptions_at_80_columns_and_wide(
    engine: Engine, database_url: str, tmp_path: Path
) -> None:
    result, e2e = _day(engine)
    env = clean_env(database_url=database_url) | {"COLUMNS": "80"}
    shown = run_pixrecon("exceptions", "--date", DAY.isoformat(), cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    _fits(shown.stdout)
    assert TXID in shown.stdout
    assert e2e in shown.stdout
    assert MONEY.search(shown.stdout)
    assert "*********01" in shown.stdout
    assert "12345678901" not in shown.stdout
    assert "10/03/2026" in shown.stdout
    # Read today, months after the day: the last day to refund has gone by, and says so.
    assert "passed" in shown.stdout
    wide = run_pixrecon("exceptions", "--date", DAY.isoformat(), "--wide", cwd=tmp_path, env=env)
    assert wide.returncode == 0, wide.stderr
    header = next(line for line in wide.stdout.splitlines() if "endToEndId" in line)
    for column in ("case", "lifecycle", "expected", "actual", "txid", "payer info", "what to do"):
        assert column in header
    row = next(line for line in wide.stdout.splitlines() if TXID in line and "refund" in line)
    assert "R$ 1.234,50" in row
    assert "Pedido 4711" in row
    assert len(result.report["exceptions"]) == 3


def test_a_day_of_many_exceptions_prints_the_most_urgent_and_says_where_the_rest_are(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, _e2e = _day(engine)
    monkeypatch.setattr("pixrecon.report.EXCEPTIONS_SHOWN", 1)
    console = Console(width=80, record=True, color_system=None)
    print_report(result, console)
    text = console.export_text()
    _fits(text)
    urgent = result.exceptions(limit=1)[0]
    assert re.search(rf"^│ {urgent['case_id']}\b", text, re.M)
    shown = {e["case_id"] for e in result.report["exceptions"]} - {urgent["case_id"]}
    assert not any(re.search(rf"^│ {case_id}\b", text, re.M) for case_id in shown)
    assert "above, the 1 most urgent of 3 exceptions" in " ".join(text.split())
    hint = "pixrecon export --date 2026-03-10 --kind exceptions --format csv --excel"
    assert hint in " ".join(text.split())


def test_the_run_keeps_a_summary_and_the_json_report_lists_every_exception(
    engine: Engine,
) -> None:
    result, _e2e = _day(engine)
    with session_scope(engine) as session:
        stored = json.loads(session.get(ReconciliationRun, result.run_id).report)  # type: ignore[union-attr, arg-type]
    assert "exceptions" not in stored, "the run keeps counts; the cases hold the rows"
    assert stored["open_exceptions"] == 3 == result.summary["open_exceptions"]
    out = io.StringIO()
    write_json_report(result, out)
    written = json.loads(out.getvalue())
    assert written == json.loads(json.dumps(result.report))
    assert [e["case_id"] for e in written["exceptions"]] == [
        e["case_id"] for e in result.exceptions()
    ]


def test_breaks_without_an_exception_says_the_bridge_is_what_breaks() -> None:
    from pixrecon.report import _verdict_line

    report = {"verdict": "breaks", "open_exceptions": 0, "bridge": {"residual_cents": -49}}
    said = _verdict_line(report)
    assert "leaves -R$ 0,49 unexplained" in said
    assert "exceptions remain" not in said
    with_cases = {**report, "open_exceptions": 2}
    assert "exceptions remain" in _verdict_line(with_cases)


def test_the_mark_of_an_urgent_case_is_said_below_the_table() -> None:
    """A ``!`` nobody explains is read as noise: the table says what it marks, and only
    when a case carries it."""
    case = {
        "case_id": 7,
        "date": "2026-03-10",
        "subject": "infraction",
        "ref": "med-1",
        "status": "open_case",
        "state": "open",
        "lifecycle": "new",
        "age_days": 0,
        "priority": 1,
        "reason": "an open MED case: the amount is at risk",
        "action": "answer the MED case by 12/03/2026 15:00: R$ 20,00 may be debited",
        "expected_cents": 2_000,
        "actual_cents": None,
    }

    def shown(priority: int) -> str:
        console = Console(width=80, record=True, color_system=None)
        console.print(exceptions_table([{**case, "priority": priority}]))
        return console.export_text()

    urgent = shown(1)
    _fits(urgent)
    assert re.search(r"^│ 7 !", urgent, re.M)
    assert "! urgent (priority 1)" in " ".join(urgent.split())
    assert "!" not in shown(2)


@pytest.mark.parametrize("width", [60, 80])
def test_an_amount_is_never_split_across_lines(engine: Engine, width: int) -> None:
    """Ten-digit reais in a narrow terminal: ``R$`` stays with its figure and the figure
    stays whole, in the bridge, the exceptions and the MED table alike; the labels and
    references give way instead."""
    book = DayBook(engine, DAY)
    txid = "cobpedidograndeoverpaid0000001"
    book.charge("cob", txid, 123_456_789_000, "08:00", expiracao=86_400)
    e2e = book.pix(123_456_789_012, "09:00", txid=txid)
    book.pix(987_654_321_098, "09:30")
    book.confirm_all_pix()
    book.line("PIX_RECEIVED", 123_456_789_012, "09:00", credit=True, endToEndId=e2e)
    result = reconcile_day(engine, DAY, now=business_day_bounds(DAY)[1] + timedelta(hours=2))
    console = Console(width=width, record=True, color_system=None)
    print_report(result, console)
    lines = console.export_text().splitlines()
    for amount in ("R$ 1.234.567.890,12", "R$ 1.234.567.890,00", "R$ 9.876.543.210,98"):
        assert any(amount in line for line in lines), (amount, "\n".join(lines))
    split = [line for line in lines if re.search(r"R\$\s*[│┃]|R\$\s*$", line)]
    assert not split, "\n".join(lines)
