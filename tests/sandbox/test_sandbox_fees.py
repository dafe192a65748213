"""The provider's fee (tarifa) per Pix received: booked as a DEBIT line of its own or
netted from the Pix's credit line, in the sandbox's books, over HTTP and in a scenario's
ground truth."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette

from sandbox.accounts import create_accounts_app
from sandbox.accounts.state import AccountsState
from sandbox.accounts.statement import FeeBooking, PixFee
from sandbox.scenario import ScenarioError, ScenarioOutcome, load_scenario, parse_scenario
from sandbox.scenario.fields import from_cents, to_cents
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider
from tests.sandbox.sandbox_support import FakeClock, accounts_api, served_app
from tests.sandbox.scenario_support import Recorder, day, pix, play
from tests.sandbox.scenario_support import recorder_server as recorder_server

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
FEE = Decimal("0.99")
FEES_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "fees.json"
BOOKINGS: tuple[FeeBooking, ...] = ("line", "netted")


def _provider(booking: FeeBooking | None = "line") -> SandboxProvider:
    fee = FEE if booking is not None else None
    provider = SandboxProvider(
        seed=5,
        clock=FakeClock(T0),
        pix_received_fee=fee,
        pix_fee_booking=booking or "line",
    )
    provider.accounts.opening_balance = Decimal("100.00")
    return provider


def _signed(line: dict[str, Any]) -> Decimal:
    amount: Decimal = line["amount"]
    return amount if line["type"] == "CREDIT" else -amount


def _assert_runs(accounts: AccountsState, lines: list[dict[str, Any]]) -> None:
    """Each line's balanceAfter is the running balance, which ends at the balance."""
    running = accounts.opening_balance
    for line in lines:
        running += _signed(line)
        assert line["balanceAfter"] == running, line["id"]
    assert running == accounts.balance()


# -- The sandbox's books -------------------------------------------------------------------


def test_without_a_fee_nothing_changes() -> None:
    provider = _provider(None)
    provider.receive_pix(Decimal("10.00"), txid="pedido1")
    (line,) = provider.accounts.statement()
    assert provider.accounts.pix_received_fee is None
    assert (line["category"], line["amount"]) == ("PIX_RECEIVED", Decimal("10.00"))
    assert "feeAmount" not in line
    assert "grossAmount" not in line
    assert provider.accounts.balance() == Decimal("110.00")


def test_line_booking_debits_the_fee_right_after_each_credit() -> None:
    provider = _provider("line")
    accounts = provider.accounts
    early = provider.receive_pix(Decimal("50.00"), horario=T0 - timedelta(hours=1))
    # Two Pix at the same instant: each fee line still follows its own credit.
    first = provider.receive_pix(Decimal("20.00"), txid="pedido1", horario=T0)
    second = provider.receive_pix(Decimal("30.00"), horario=T0)
    provider.refund_pix(first["endToEndId"], Decimal("5.00"), at=T0)  # DEVOLVIDO: a debit

    lines = accounts.statement()
    assert [line["category"] for line in lines].count("PIX_RECEIVED_FEE") == 3
    credits = {line["endToEndId"]: line for line in lines if line["category"] == "PIX_RECEIVED"}
    assert {e2e: line["amount"] for e2e, line in credits.items()} == {
        early["endToEndId"]: Decimal("50.00"),
        first["endToEndId"]: Decimal("20.00"),
        second["endToEndId"]: Decimal("30.00"),
    }
    for index, line in enumerate(lines):
        if line["category"] != "PIX_RECEIVED_FEE":
            continue
        credit = lines[index - 1]
        assert credit["category"] == "PIX_RECEIVED"
        assert (line["type"], line["amount"]) == ("DEBIT", FEE)
        assert line["endToEndId"] == credit["endToEndId"]
        assert line["txId"] == credit["txId"]
        assert line["createdAt"] == credit["createdAt"]
        assert line["id"] != credit["id"]
        assert "feeAmount" not in credit
    assert len({line["id"] for line in lines}) == len(lines)
    expected = Decimal("100.00") + Decimal("100.00") - 3 * FEE - Decimal("5.00")
    assert accounts.balance() == expected == Decimal("192.03")
    _assert_runs(accounts, lines)


def test_netted_booking_takes_the_fee_off_the_credit_line() -> None:
    provider = _provider("netted")
    accounts = provider.accounts
    received = provider.receive_pix(Decimal("20.00"), txid="pedido1")
    provider.receive_pix(Decimal("30.00"))

    lines = accounts.statement()
    assert [line["category"] for line in lines] == ["PIX_RECEIVED", "PIX_RECEIVED"]
    by_e2e = {line["endToEndId"]: line for line in lines}
    line = by_e2e[received["endToEndId"]]
    assert (line["type"], line["amount"]) == ("CREDIT", Decimal("19.01"))
    assert (line["feeAmount"], line["grossAmount"]) == (FEE, Decimal("20.00"))
    assert all(line["amount"] == line["grossAmount"] - line["feeAmount"] for line in lines)
    # The QR code side still shows the Pix's full value.
    shown = provider.get_pix(received["endToEndId"])
    assert shown is not None
    assert shown["valor"] == "20.00"
    assert accounts.balance() == Decimal("100.00") + Decimal("50.00") - 2 * FEE
    _assert_runs(accounts, lines)


@pytest.mark.parametrize("booking", BOOKINGS)
def test_a_fee_never_exceeds_its_pix(booking: FeeBooking) -> None:
    provider = _provider(booking)
    tip = provider.receive_pix(Decimal("0.50"))
    assert provider.accounts.fee_charged(tip["endToEndId"]) == Decimal("0.50")
    lines = provider.accounts.statement()
    if booking == "line":
        assert [line["amount"] for line in lines] == [Decimal("0.50"), Decimal("0.50")]
    else:
        (line,) = lines
        assert (line["amount"], line["feeAmount"]) == (Decimal("0.00"), Decimal("0.50"))
    assert provider.accounts.balance() == Decimal("100.00")
    _assert_runs(provider.accounts, lines)


def test_payout_returns_pay_no_fee() -> None:
    provider = _provider("line")
    accounts = provider.accounts
    provider.receive_pix(Decimal("500.00"))
    accounts.create_payment("po-1", Decimal("200.00"), pix_key="a@example.com")
    accounts.settle_payment("po-1")
    accounts.refund_payment("po-1", Decimal("50.00"))

    lines = accounts.statement()
    assert Counter(line["category"] for line in lines) == {
        "PIX_RECEIVED": 1,
        "PIX_RECEIVED_FEE": 1,
        "PIX_PAYMENT": 1,
        "PIX_PAYMENT_REFUND": 1,
    }
    assert accounts.balance() == Decimal("100.00") + 500 - FEE - 200 + 50
    _assert_runs(accounts, lines)


def test_a_new_tariff_leaves_the_fees_already_charged() -> None:
    provider = _provider("line")
    accounts = provider.accounts
    before = provider.receive_pix(Decimal("10.00"), horario=T0)
    accounts.set_pix_received_fee(Decimal("2.00"), "netted")
    assert accounts.pix_received_fee == PixFee(Decimal("2.00"), "netted")
    netted = provider.receive_pix(Decimal("10.00"), horario=T0 + timedelta(minutes=1))
    accounts.set_pix_received_fee(None)
    free = provider.receive_pix(Decimal("10.00"), horario=T0 + timedelta(minutes=2))

    assert [accounts.fee_charged(p["endToEndId"]) for p in (before, netted, free)] == [
        FEE,
        Decimal("2.00"),
        Decimal(0),
    ]
    lines = accounts.statement()
    assert [(line["category"], line["amount"]) for line in lines] == [
        ("PIX_RECEIVED", Decimal("10.00")),
        ("PIX_RECEIVED_FEE", FEE),
        ("PIX_RECEIVED", Decimal("8.00")),
        ("PIX_RECEIVED", Decimal("10.00")),
    ]
    _assert_runs(accounts, lines)


@pytest.mark.parametrize(
    ("amount", "booking", "message"),
    [
        (Decimal("-0.99"), "line", "out of range"),
        (Decimal("0.999"), "line", "more than 2 decimal places"),
        (Decimal("0.99"), "gross", "booked as one of line, netted"),
    ],
)
def test_a_bad_tariff_is_refused(amount: Decimal, booking: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SandboxProvider(pix_received_fee=amount, pix_fee_booking=booking)


# -- Over HTTP -----------------------------------------------------------------------------


app, server = served_app(create_accounts_app)


@pytest.mark.parametrize("booking", BOOKINGS)
def test_the_balance_and_statement_endpoints_show_the_fees(
    app: Starlette, server: BackgroundServer, booking: FeeBooking
) -> None:
    provider = _provider(booking)
    app.state.provider = provider
    provider.receive_pix(Decimal("10.00"), txid="pedido1", horario=T0)
    provider.receive_pix(Decimal("25.00"), horario=T0 + timedelta(minutes=5))
    with accounts_api(server.url) as api:
        balance = api.get_balance()
        lines = list(api.iter_statement(T0 - timedelta(hours=1), T0 + timedelta(hours=1)))
    assert balance == Decimal("100.00") + Decimal("35.00") - 2 * FEE
    assert lines[-1]["balanceAfter"] == balance
    fees = [line["amount"] for line in lines if line["category"] == "PIX_RECEIVED_FEE"]
    netted = [line["feeAmount"] for line in lines if "feeAmount" in line]
    assert (fees, netted) == (([FEE, FEE], []) if booking == "line" else ([], [FEE, FEE]))
    assert all(isinstance(amount, Decimal) for amount in fees + netted)


# -- Scenarios -----------------------------------------------------------------------------


def _fee_day(booking: FeeBooking) -> dict[str, Any]:
    return {
        "fees": {"pix_received": "0.99", "booking": booking},
        "opening_balance": "100.00",
        "charges": [{"ref": "order-1", "kind": "cob", "amount": "40.00", "at": "08:00"}],
    }


FEE_EVENTS: tuple[dict[str, Any], ...] = (
    pix("pixA", "09:00", "20.00"),
    {"type": "pix", "ref": "pix-walk-in", "at": "09:05", "amount": "15.00"},
    pix("pixTip", "09:10", "0.50"),
    {"type": "charge_payment", "ref": "pix-order-1", "charge": "order-1", "at": "09:30"},
    {"type": "refund", "ref": "refund-A", "pix": "pixA", "amount": "5.00", "at": "10:00"},
    {"type": "refund_settled", "refund": "refund-A", "at": "10:05"},
    {"type": "payout", "ref": "po-1", "amount": "30.00", "at": "11:00"},
    {"type": "payout_settled", "payout": "po-1", "at": "11:01"},
    {"type": "payout_refunded", "payout": "po-1", "amount": "10.00", "at": "12:00"},
)


def _assert_adds_up(outcome: ScenarioOutcome, provider: SandboxProvider) -> None:
    totals = outcome.totals
    closing = outcome.opening_balance_cents + totals.credits_cents - totals.debits_cents
    assert outcome.closing_balance_cents == closing
    assert provider.accounts.balance() == from_cents(outcome.closing_balance_cents)
    lines = provider.accounts.statement(outcome.day_start, outcome.day_end)
    assert to_cents(sum(map(_signed, lines), Decimal(0))) == totals.net_cents
    by_category = Counter[str]()
    for line in lines:
        by_category[line["category"]] += to_cents(line["amount"])
    assert dict(by_category) == dict(totals.by_category)
    received = outcome.movements_of("pix_received")
    assert totals.fees_cents == sum(m.fee_cents for m in received)
    assert all(m.fee_cents == 0 for m in outcome.movements if m.kind != "pix_received")


@pytest.mark.parametrize("booking", BOOKINGS)
def test_a_day_with_fees_adds_up(
    recorder_server: tuple[Recorder, BackgroundServer], booking: FeeBooking
) -> None:
    _, server = recorder_server
    outcome, provider = play(day(*FEE_EVENTS, **_fee_day(booking)), server)
    _assert_adds_up(outcome, provider)
    totals = outcome.totals
    fees = {m.ref: m.fee_cents for m in outcome.movements_of("pix_received")}
    assert fees == {"pixA": 99, "pix-walk-in": 99, "pixTip": 50, "pix-order-1": 99}
    assert totals.fees_cents == 347
    gross = 2000 + 1500 + 50 + 4000
    if booking == "line":
        assert totals.credits_cents == gross + 1000  # and the payout's return
        assert totals.debits_cents == 500 + 3000 + 347
        assert totals.by_category["PIX_RECEIVED"] == gross
        assert totals.by_category["PIX_RECEIVED_FEE"] == 347
    else:
        assert totals.credits_cents == gross - 347 + 1000
        assert totals.debits_cents == 500 + 3000
        assert totals.by_category["PIX_RECEIVED"] == gross - 347
        assert "PIX_RECEIVED_FEE" not in totals.by_category
        lines = provider.accounts.statement(outcome.day_start, outcome.day_end)
        assert to_cents(sum(line.get("feeAmount", 0) for line in lines)) == 347
    assert outcome.closing_balance_cents == 10_000 + gross + 1000 - 500 - 3000 - 347
    # The QR code API and its notifications still carry each Pix's full value.
    assert outcome.movement("pixA").amount_cents == 2000
    notified = [n.payload for n in outcome.notifications if n.channel == "pix"]
    assert {p["valor"] for p in notified if p["endToEndId"] == outcome.refs["pixA"]} == {"20.00"}


def test_a_day_without_fees_has_none(recorder_server: tuple[Recorder, BackgroundServer]) -> None:
    _, server = recorder_server
    top = {key: value for key, value in _fee_day("line").items() if key != "fees"}
    outcome, provider = play(day(*FEE_EVENTS, **top), server)
    _assert_adds_up(outcome, provider)
    assert outcome.totals.fees_cents == 0
    assert "PIX_RECEIVED_FEE" not in outcome.totals.by_category
    assert provider.accounts.pix_received_fee is None


def _problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(data, source="day.json")
    assert str(caught.value).startswith("day.json: invalid scenario")
    return caught.value.problems


@pytest.mark.parametrize(
    ("fees", "expected"),
    [
        ({"pix_received": "0.99", "colour": "blue"}, "fees: unknown key 'colour'"),
        ({"booking": "line"}, "fees: missing key 'pix_received'"),
        (
            {"pix_received": "0.999"},
            "fees.pix_received: '0.999' is not an amount in reais with at most 2 decimal places",
        ),
        ({"pix_received": "0.00"}, "fees.pix_received: '0.00' is not a positive amount"),
        ({"pix_received": 0.99}, "fees.pix_received: an amount is a string"),
        (
            {"pix_received": "0.99", "booking": "gross"},
            "fees.booking: Input should be 'line' or 'netted'",
        ),
        ("0.99", "fees: Input should be a valid dictionary"),
    ],
)
def test_a_bad_fees_key_is_named(fees: Any, expected: str) -> None:
    problems = _problems({"name": "d", "date": "2026-03-02", "fees": fees})
    assert any(problem.startswith(expected) for problem in problems), problems


def test_fees_read_exact_amounts_and_default_to_a_line() -> None:
    scenario = parse_scenario({"name": "d", "fees": {"pix_received": Decimal("1.5")}})
    assert scenario.fees is not None
    assert (scenario.fees.pix_received, scenario.fees.booking) == (Decimal("1.50"), "line")
    assert parse_scenario({"name": "d"}).fees is None


def test_the_fees_example_loads_and_plays(
    recorder_server: tuple[Recorder, BackgroundServer],
) -> None:
    scenario = load_scenario(FEES_EXAMPLE)
    assert scenario.fees is not None
    assert (scenario.fees.pix_received, scenario.fees.booking) == (FEE, "line")
    _, server = recorder_server
    outcome, provider = play(scenario, server)
    _assert_adds_up(outcome, provider)
    totals = outcome.totals
    assert (totals.credits_cents, totals.debits_cents, totals.fees_cents) == (
        18_550,
        31_847,
        347,
    )
    assert outcome.closing_balance_cents == 36_703
    assert {p.ref: p.outcome for p in outcome.payments} == {"order-2001": "paid"}
    assert outcome.pix_only_by_polling == (outcome.refs["pix-walk-in"],)
    assert {m.kind for m in outcome.movements if m.booked} == {
        "pix_received",
        "pix_refund",
        "payout",
    }
