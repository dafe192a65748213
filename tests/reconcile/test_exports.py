"""Exports of a reconciled day (docs/exports.md): a day written item by item through the
real inbox and handlers (``DayBook``), reconciled, then exported in every kind and format
and read back — the Excel CSV with ``;`` and decimal commas, the plain CSV, JSON lines,
and the OFX statement with ofxtools (and ofxparse when it is installed) — on SQLite and
PostgreSQL."""

from __future__ import annotations

import csv
import io
import json
import warnings
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import pytest
from ofxtools.Parser import OFXTree
from sqlalchemy import Engine, select, update
from sqlmodel import col

from reconcile.cases import set_state
from reconcile.db import session_scope, table_of
from reconcile.exports import movements as movement_rows
from reconcile.exports import statement as statement_rows
from reconcile.exports.files import Format, Kind, encoded, open_export
from reconcile.exports.ofx import OfxAccount
from reconcile.exports.table import ExportError, NotReconciled, RunReplaced
from reconcile.masking import mask_document
from reconcile.models import CaseState, Confirmation, PixReceived, ReconciliationItem, Source
from reconcile.nightly import EXCEPTION_FIELDS, NightlyResult, reconcile_day
from reconcile.payloads.pix import PixItem, pix_items
from reconcile.timeutil import business_day_bounds
from tests.factories import e2e_id
from tests.reconcile.day_book import DayBook, reais

PAST = date(2026, 3, 10)
AFTER = business_day_bounds(PAST)[1] + timedelta(hours=2)
CPF, NAME = "12345678909", "Fulana Quixabeira"
TXID = "exportpedido000000000000000001"


@dataclass
class Day:
    book: DayBook
    opening: int
    received: str  # a Pix with a fee netted from its line, paying a charge
    with_fee_line: str  # a Pix whose fee is a line of its own
    forged: str  # notified, never confirmed: an exception with a payer
    payout_line: str
    unexplained_line: str
    result: NightlyResult


def _pix_with_payer(book: DayBook, cents: int, clock: str, *, confirmed: bool, **extra: Any) -> str:
    e2e = e2e_id()
    raw: dict[str, Any] = {
        "endToEndId": e2e,
        "valor": reais(cents),
        "horario": book.at(clock).isoformat(),
        "pagador": {"cpf": CPF, "nome": NAME},
        **extra,
    }
    items = pix_items(PixItem.model_validate(raw), raw)
    book._store(items, Source.WEBHOOK)
    if confirmed:
        book._store(items, Source.POLL)
    return e2e


def _build(engine: Engine) -> Day:
    book = DayBook(engine, PAST)
    opening = book.balance
    book.charge("cob", TXID, 15_000, "09:00")
    received = _pix_with_payer(book, 15_000, "10:00", confirmed=True, txid=TXID)
    with_fee_line = _pix_with_payer(book, 7_000, "11:00", confirmed=True)
    book.confirm_all_pix()
    forged = _pix_with_payer(book, 4_321, "12:00", confirmed=False)
    with session_scope(engine) as session:  # what the confirm job does when the API denies it
        session.execute(
            update(PixReceived)
            .where(col(PixReceived.end_to_end_id) == forged)
            .values(confirmation=Confirmation.UNCONFIRMED_WEBHOOK.value)
        )
    # The provider netted its fee from the first Pix's line: 150.00 - 0.99 reached the
    # account; for the second it booked the fee as a line of its own.
    book.line("PIX_RECEIVED", 14_901, "10:00", credit=True, endToEndId=received, feeAmount="0.99")
    book.line("PIX_RECEIVED", 7_000, "11:00", credit=True, endToEndId=with_fee_line)
    book.line("PIX_RECEIVED_FEE", 99, "11:00", credit=False, endToEndId=with_fee_line)
    book.transfer(book.payout_data("po-1", 5_000, "13:00"), webhook=False, polled=True)
    payout_line = book.line("PIX_PAYMENT", 5_000, "13:00", credit=False, idempotencyKey="po-1")
    unexplained_line = book.line("ADJUSTMENT", 1_234, "23:30", credit=False)
    result = reconcile_day(engine, PAST, now=AFTER)
    return Day(
        book,
        opening,
        received,
        with_fee_line,
        forged,
        payout_line,
        unexplained_line,
        result,
    )


@pytest.fixture
def day(engine: Engine) -> Day:
    return _build(engine)


def _text(engine: Engine, kind: Kind, fmt: Format, *, excel: bool = False) -> str:
    made = open_export(engine, PAST, kind, fmt, excel=excel, account=OfxAccount("341", "12345-6"))
    return b"".join(encoded(made.chunks)).decode("utf-8")


def _jsonl(engine: Engine, kind: Kind) -> list[dict[str, Any]]:
    return [json.loads(line) for line in _text(engine, kind, Format.jsonl).splitlines()]


def _cents(text: str, decimal_mark: str) -> int | None:
    if text == "":
        return None
    whole, _, fraction = text.partition(decimal_mark)
    assert len(fraction) == 2, text
    assert decimal_mark == "," or "," not in text, text  # no thousands separators
    return int(Decimal(f"{whole}.{fraction}") * 100)


def _check_against_jsonl(
    rows: list[dict[str, str]], jsonl: list[dict[str, Any]], decimal_mark: str, day_text: str
) -> None:
    assert [row["key"] for row in rows] == [line["key"] for line in jsonl]
    for row, line in zip(rows, jsonl, strict=True):
        for column, value in line.items():
            if column.endswith("_cents"):
                assert column not in row
                assert _cents(row[column.removesuffix("_cents")], decimal_mark) == value, column
            elif column == "date":
                assert value == PAST.isoformat()
                assert row[column] == day_text
            elif isinstance(value, str) and column in ("ref", "reason", "state", "entry_id"):
                assert row[column] == value, column


KINDS = (Kind.exceptions, Kind.movements, Kind.statement)


def test_both_csv_forms_round_trip_to_the_centavos_of_the_json_lines(
    day: Day, engine: Engine
) -> None:
    for kind in KINDS:
        jsonl = _jsonl(engine, kind)
        assert jsonl, kind

        made = open_export(engine, PAST, kind, Format.csv, excel=True)
        raw = b"".join(encoded(made.chunks))
        assert raw.startswith(b"\xef\xbb\xbf")  # UTF-8 with a byte order mark
        assert made.filename == f"{kind.value}-{PAST.isoformat()}-excel.csv"
        text = raw.decode("utf-8-sig")
        rows = list(csv.DictReader(io.StringIO(text, newline=""), delimiter=";"))
        _check_against_jsonl(rows, jsonl, ",", PAST.strftime("%d/%m/%Y"))
        if kind is Kind.statement:
            booked = {row["key"]: row["booked_at"] for row in rows}
            # São Paulo wall-clock time, as the day book wrote it.
            assert booked[f"stmt:{day.unexplained_line}"] == "10/03/2026 23:30:00"

        text = _text(engine, kind, Format.csv)
        assert not text.startswith("\ufeff")
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
        _check_against_jsonl(rows, jsonl, ".", PAST.isoformat())


def _statement_lines_split_netted_fees_and_add_up(day: Day, engine: Engine) -> None:
    lines = {line["key"]: line for line in _jsonl(engine, Kind.statement)}
    netted = lines[f"stmt:line-{PAST.isoformat()}-1"]
    fee = lines[f"stmt:line-{PAST.isoformat()}-1:fee"]
    assert (netted["fitid"], netted["trntype"], netted["amount_cents"]) == (
        day.received,
        "CREDIT",
        15_000,
    )
    assert (fee["fitid"], fee["trntype"], fee["amount_cents"]) == (
        f"{day.received}:fee",
        "FEE",
        -99,
    )
    assert (netted["balance_after_cents"], fee["balance_after_cents"]) == (
        None,
        day.opening + 14_901,
    )
    change = day.book.balance - day.opening
    assert sum(line["amount_cents"] for line in lines.values()) == change
    bridge = day.result.report["bridge"]
    assert bridge["closing_cents"] - bridge["opening_cents"] == change


def _ofx_lines(text: str) -> tuple[Any, list[Any]]:
    tree = OFXTree()
    tree.parse(io.BytesIO(text.encode("ascii")))
    (statement,) = tree.convert().statements
    return statement, list(statement.transactions)


def test_the_statement_and_its_ofx_split_fees_and_add_up_to_the_balance_change(
    day: Day, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    _statement_lines_split_netted_fees_and_add_up(day, engine)
    whole = _jsonl(engine, Kind.statement)
    with monkeypatch.context() as patched:  # one entry a chunk: two share 11:00
        patched.setattr(statement_rows, "CHUNK", 1)
        assert _jsonl(engine, Kind.statement) == whole
    made = open_export(engine, PAST, Kind.statement, Format.ofx, account=OfxAccount("341", "1-2"))
    assert (made.filename, made.media_type) == (f"statement-{PAST}.ofx", "application/x-ofx")
    text = b"".join(encoded(made.chunks)).decode("ascii")
    assert text.startswith("OFXHEADER:100")
    statement, transactions = _ofx_lines(text)
    assert (statement.account.bankid, statement.account.acctid) == ("341", "1-2")
    assert statement.curdef == "BRL"
    start, end = business_day_bounds(PAST)
    assert (statement.banktranlist.dtstart, statement.banktranlist.dtend) == (start, end)
    found = {t.fitid: (t.trntype, t.trnamt) for t in transactions}
    assert found == {
        day.received: ("CREDIT", Decimal("150.00")),
        f"{day.received}:fee": ("FEE", Decimal("-0.99")),
        day.with_fee_line: ("CREDIT", Decimal("70.00")),
        f"{day.with_fee_line}:fee": ("FEE", Decimal("-0.99")),
        day.payout_line: ("DEBIT", Decimal("-50.00")),
        day.unexplained_line: ("DEBIT", Decimal("-12.34")),
    }
    assert len(transactions) == len(found)
    # The lines add up to the day's balance change; the ledger balance is where it ends.
    change = Decimal(day.book.balance - day.opening) / 100
    assert sum(t.trnamt for t in transactions) == change
    assert statement.ledgerbal.balamt == Decimal(day.book.balance) / 100
    late = next(t for t in transactions if t.fitid == day.unexplained_line)
    assert late.dtposted == day.book.at("23:30")
    # An importer that reads only the date still gets the business day (local time).
    assert "<DTPOSTED>20260310233000.000[-3:BRT]</DTPOSTED>" in text
    # The same FITIDs and money as the CSV's lines.
    csv_lines = _jsonl(engine, Kind.statement)
    assert {line["fitid"]: line["amount_cents"] for line in csv_lines} == {
        fitid: int(amount * 100) for fitid, (_, amount) in found.items()
    }
    _read_with_ofxparse(text, day.book.balance, transactions)


def _read_with_ofxparse(text: str, balance: int, transactions: list[Any]) -> None:
    """A second, independent reader, when it is installed (the test extra has it)."""
    try:
        import ofxparse
    except ImportError:
        return
    with warnings.catch_warnings():  # its own use of BeautifulSoup's deprecated names
        warnings.simplefilter("ignore", DeprecationWarning)
        parsed = ofxparse.OfxParser.parse(io.BytesIO(text.encode("ascii")))
    statement = parsed.account.statement
    assert {(t.id, t.amount) for t in statement.transactions} == {
        (t.fitid, t.trnamt) for t in transactions
    }
    assert statement.balance == Decimal(balance) / 100
    assert parsed.account.account_id == "1-2"


def _keys(engine: Engine) -> dict[Kind, list[str]]:
    return {kind: [row["key"] for row in _jsonl(engine, kind)] for kind in KINDS}


def _every_verdict_even_in_chunks(
    day: Day, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One row per verdict of the run, however many chunks they are read in."""
    whole = _jsonl(engine, Kind.movements)
    items = table_of(ReconciliationItem)
    with session_scope(engine) as session:
        refs = session.execute(
            select(items.c.subject, items.c.ref).where(items.c.run_id == day.result.run_id)
        ).all()
    assert sorted(row["key"] for row in whole) == sorted(f"{s}:{r}" for s, r in refs)
    with monkeypatch.context() as patched:
        patched.setattr(movement_rows, "CHUNK", 2)
        assert _jsonl(engine, Kind.movements) == whole


def test_keys_stay_the_same_across_a_rerun_and_a_second_export(
    day: Day, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _keys(engine)
    for keys in first.values():
        assert len(keys) == len(set(keys))
    assert first[Kind.exceptions]
    case = next(e for e in day.result.report["exceptions"] if e["ref"] == day.forged)
    assert f"exc:{PAST}:movement:{day.forged}:{case['status']}" in first[Kind.exceptions]
    assert f"movement:{day.received}" in first[Kind.movements]
    assert f"charge:cob:{TXID}" in first[Kind.movements]
    assert f"statement:{day.unexplained_line}" in first[Kind.movements]
    assert first == _keys(engine)  # exported twice
    _every_verdict_even_in_chunks(day, engine, monkeypatch)

    again = reconcile_day(engine, PAST, now=AFTER)
    assert again.run_id != day.result.run_id
    assert _keys(engine) == first  # the day re-run, then exported again


def _exceptions_by_ref(engine: Engine) -> dict[str, dict[str, Any]]:
    return {row["ref"]: row for row in _jsonl(engine, Kind.exceptions)}


def test_exceptions_carry_the_current_state_and_note_of_their_cases(
    day: Day, engine: Engine
) -> None:
    report = {e["ref"]: e for e in day.result.report["exceptions"]}
    forged, unexplained = report[day.forged], report[day.unexplained_line]
    with session_scope(engine) as session:
        set_state(session, forged["case_id"], CaseState.RESOLVED, "=forged: ticket 9", actor="t")
        set_state(session, unexplained["case_id"], CaseState.ACKNOWLEDGED, None, actor="t")
    rows = _exceptions_by_ref(engine)
    assert set(rows) == set(report)
    assert (rows[day.forged]["state"], rows[day.forged]["note"]) == (
        "resolved",
        "=forged: ticket 9",
    )
    assert (rows[day.unexplained_line]["state"], rows[day.unexplained_line]["note"]) == (
        "acknowledged",
        None,
    )
    assert report[day.forged]["state"] == "open"  # the run's own word, unchanged
    columns = list(_jsonl(engine, Kind.exceptions)[0])
    assert columns[0] == "key"
    assert [c for c in columns if c not in ("key", "date", "note")] == [
        c for c in EXCEPTION_FIELDS if c not in ("key", "date", "note")
    ]
    # A note that reads like a formula is not one in a spreadsheet.
    text = _text(engine, Kind.exceptions, Format.csv, excel=True)
    assert ";'=forged: ticket 9" in text


def test_payer_data_leaves_masked_only(day: Day, engine: Engine) -> None:
    outputs = [
        _text(engine, kind, fmt, excel=excel)
        for kind in KINDS
        for fmt, excel in ((Format.csv, False), (Format.csv, True), (Format.jsonl, False))
    ]
    outputs.append(_text(engine, Kind.statement, Format.ofx))
    for text in outputs:
        assert CPF not in text
        for part in NAME.split():
            assert part not in text
    movements = {row["ref"]: row for row in _jsonl(engine, Kind.movements)}
    received = movements[day.received]
    assert received["payer_document"] == mask_document(CPF)
    assert received["payer_name"] == "F***** Q*********"
    assert received["txid"] == TXID
    assert received["net_cents"] == 15_000
    assert movements[f"cob:{TXID}"]["payer_document"] is None


def test_a_day_without_a_completed_run_has_no_exceptions_or_movements(engine: Engine) -> None:
    for kind in (Kind.exceptions, Kind.movements):
        with pytest.raises(NotReconciled, match=f"pixrecon reconcile --date {PAST}"):
            open_export(engine, PAST, kind, Format.csv)
    # The statement is the provider's, read as booked: no run needed (here: none booked).
    assert _text(engine, Kind.statement, Format.csv).splitlines() == [
        "key,date,booked_at,entry_id,fitid,trntype,description,category,amount,balance_after,"
        "end_to_end_id,original_end_to_end_id,idempotency_key,txid,infraction_id"
    ]


def test_ofx_needs_the_statement_and_excel_needs_csv(engine: Engine) -> None:
    with pytest.raises(ExportError, match="only the statement"):
        open_export(engine, PAST, Kind.exceptions, Format.ofx)
    with pytest.raises(ExportError, match="goes with csv"):
        open_export(engine, PAST, Kind.statement, Format.jsonl, excel=True)


def test_a_rerun_while_movements_are_read_is_not_a_silently_short_file(
    day: Day, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(movement_rows, "CHUNK", 2)
    rows = iter(movement_rows.movement_table(engine, PAST).rows)
    next(rows)  # the first chunk is read
    reconcile_day(engine, PAST, now=AFTER)  # and the day's verdicts replaced meanwhile
    with pytest.raises(RunReplaced, match="export it again"):
        list(rows)


def test_a_movement_booked_twice_keeps_both_lines_apart(engine: Engine) -> None:
    book = DayBook(engine, PAST)
    e2e = book.pix(2_000, "10:00")
    first = book.line("PIX_RECEIVED", 2_000, "10:00", credit=True, endToEndId=e2e)
    second = book.line("PIX_RECEIVED", 2_000, "10:05", credit=True, endToEndId=e2e)
    fitids = [line["fitid"] for line in _jsonl(engine, Kind.statement)]
    assert fitids == [e2e, f"{e2e}:{second}"]
    assert first != second
    _, transactions = _ofx_lines(_text(engine, Kind.statement, Format.ofx))
    assert [t.fitid for t in transactions] == fitids


def test_a_day_without_lines_states_the_balance_it_was_left_at(engine: Engine) -> None:
    book = DayBook(engine, PAST)
    book.line("PIX_RECEIVED", 2_000, "10:00", credit=True, endToEndId=e2e_id())
    made = open_export(engine, PAST + timedelta(days=1), Kind.statement, Format.ofx)
    statement, transactions = _ofx_lines(b"".join(encoded(made.chunks)).decode("ascii"))
    assert transactions == []
    assert statement.ledgerbal.balamt == Decimal(book.balance) / 100


def test_an_ofx_without_any_known_balance_is_refused(engine: Engine) -> None:
    with pytest.raises(ExportError, match="no balance is known"):
        open_export(engine, PAST, Kind.statement, Format.ofx)


@pytest.mark.parametrize(
    ("column", "sent", "leaves"),
    [
        ("payer_document", "529.982.247-2*", "********72"),
        ("payer_document", "*********09", "*********09"),
        ("payer_name", "Zacarias* Quintanilha Sobrinho", "Z******** Q********** S*******"),
        ("payer_name", "M**** S****", "M**** S****"),
    ],
)
def test_an_asterisk_a_sender_wrote_is_no_mask(column: str, sent: str, leaves: str) -> None:
    """Only a value masked as pixrecon masks it stays as it is: a CPF or a name with an
    asterisk somewhere is masked like any other."""
    from reconcile.exports.cells import masked

    assert masked(column, sent) == leaves
