"""The scenario format: strict, with errors that say what is wrong and where."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any, get_args

import pytest

from sandbox.scenario import ScenarioError, load_scenario, loads_scenario, parse_scenario
from sandbox.scenario.events import ChargePayment, Event, Refund
from tests.sandbox.scenario_support import EXAMPLE

DOCS = Path(__file__).resolve().parents[2] / "docs" / "scenarios.md"


def _problems(data: Any) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(data, source="day.json")
    assert str(caught.value).startswith("day.json: invalid scenario")
    return caught.value.problems


def _base(*events: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"name": "d", "date": "2026-03-02", **top, "events": list(events)}


PIX = {"type": "pix", "ref": "p1", "at": "09:00", "amount": "10.00", "txid": "t1"}


def test_the_example_file_loads() -> None:
    scenario = load_scenario(EXAMPLE)
    assert scenario.name == "business-day"
    assert str(scenario.date) == "2026-03-02"
    assert scenario.opening_balance == Decimal("2500.00")
    # Every kind of event, set-up and delivery fault appears in the example.
    every_type = {
        get_args(member.model_fields["type"].annotation)[0]
        for member in get_args(get_args(Event)[0])
    }
    assert {event.type for event in scenario.events} == every_type
    assert {charge.kind for charge in scenario.charges} == {"cob", "cobv"}
    assert scenario.recurrences
    assert scenario.recurring_charges
    assert scenario.reorder
    faults = {getattr(e.delivery, "fault", None) for e in scenario.events if hasattr(e, "delivery")}
    assert faults >= {"drop", "duplicate", "delay"}


def test_the_docs_example_is_the_example_file() -> None:
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## Complete example", 1)[1]
    block = re.search(r"```json\n(.*?)\n```", section, re.DOTALL)
    assert block is not None
    assert json.loads(block.group(1)) == json.loads(EXAMPLE.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({**_base(), "colour": "blue"}, "(top level): unknown key 'colour'"),
        (_base({**PIX, "amout": "1.00"}), "events[0] (pix): unknown key 'amout'"),
        (
            _base({**PIX, "delivery": {"fault": "drop", "copies": 2}}),
            "events[0] (pix).delivery (drop): unknown key 'copies'",
        ),
        (
            {**_base(), "charges": [{"kind": "cob", "ref": "c", "amount": "1.00", "due": 1}]},
            "charges[0] (cob): unknown key 'due'",
        ),
    ],
)
def test_an_unknown_key_is_named(data: dict[str, Any], expected: str) -> None:
    assert expected in _problems(data)


@pytest.mark.parametrize(
    ("amount", "reason"),
    [
        ("10.001", "at most 2 decimal places"),
        ("ten", "is not an amount"),
        ("-5.00", "not a positive amount"),
        ("0.00", "not a positive amount"),
        (10.5, "is a string"),  # a Python float: the exact value is already lost
        ("12345678901.00", "above the largest Pix amount"),
    ],
)
def test_a_bad_amount_is_explained(amount: object, reason: str) -> None:
    (problem,) = _problems(_base({**PIX, "amount": amount}))
    assert problem.startswith("events[0] (pix).amount: ")
    assert reason in problem


def test_json_numbers_are_read_exactly() -> None:
    text = json.dumps(_base()).replace('"events": []', '"events": [%s]')
    event = '{"type": "pix", "ref": "p1", "at": "09:00", "amount": 0.10}'
    scenario = loads_scenario(text % event)
    assert scenario.events[0].amount == Decimal("0.10")  # type: ignore[union-attr]


@pytest.mark.parametrize("at", ["25:00", "9:00", "12:60", "noon", 900, "12:00:00Z"])
def test_a_bad_time_is_explained(at: object) -> None:
    (problem,) = _problems(_base({**PIX, "at": at}))
    assert problem.startswith("events[0] (pix).at: ")
    assert "time of day" in problem


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        (
            [{"type": "refund", "ref": "r1", "pix": "p9", "at": "10:00", "amount": "1.00"}],
            "events[0] (refund): no Pix 'p9' exists by 10:00:00",
        ),
        (
            [PIX, {"type": "refund", "ref": "r1", "pix": "p1", "at": "08:00", "amount": "1.00"}],
            "events[1] (refund): no Pix 'p1' exists by 08:00:00",
        ),
        (
            [PIX, {"type": "refund", "ref": "r1", "pix": "p1", "at": "10:00", "amount": "11.00"}],
            "events[1] (refund): refunds of 'p1' would exceed its amount, 10.00",
        ),
        ([PIX, {**PIX, "at": "10:00"}], "events[1]: ref 'p1' is already used by events[0]"),
        (
            [
                {"type": "payout", "ref": "po", "at": "10:00", "amount": "5.00"},
                {"type": "payout_settled", "payout": "po", "at": "10:01"},
                {"type": "payout_canceled", "payout": "po", "at": "10:02"},
            ],
            "events[2] (payout_canceled): payout 'po' is already LIQUIDATED",
        ),
    ],
)
def test_a_day_that_cannot_happen_is_refused(events: list[dict[str, Any]], expected: str) -> None:
    assert _problems(_base(*events)) == [expected]


def test_paying_an_expired_charge_is_refused() -> None:
    charge = {"kind": "cob", "ref": "c", "amount": "5.00", "at": "08:00", "expires_in": 60}
    paid = {"type": "charge_payment", "ref": "p", "charge": "c", "at": "08:01"}
    (problem,) = _problems({**_base(paid), "charges": [charge]})
    assert "charge 'c' has expired by then" in problem


def test_events_are_parsed_into_their_types() -> None:
    charge = {"kind": "cob", "ref": "c", "amount": "5.00"}
    paid = {"type": "charge_payment", "ref": "p", "charge": "c", "at": "08:01"}
    refund = {"type": "refund", "ref": "r", "pix": "p", "at": "09:00", "amount": "5.00"}
    scenario = parse_scenario({**_base(paid, refund), "charges": [charge]})
    assert isinstance(scenario.events[0], ChargePayment)
    assert isinstance(scenario.events[1], Refund)
    assert scenario.events[1].status == "EM_PROCESSAMENTO"
    assert [step.location for step in scenario.timeline()] == [
        "charges[0]",
        "events[0]",
        "events[1]",
    ]


def test_unreadable_files_say_so(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="no such file"):
        load_scenario(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"name": "x",}', encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"not valid JSON: .* \(line 1, column 14\)"):
        load_scenario(broken)
    listed = tmp_path / "list.json"
    listed.write_text("[]", encoding="utf-8")
    with pytest.raises(ScenarioError, match="must be a JSON object"):
        load_scenario(listed)


@pytest.mark.parametrize("path", sorted(EXAMPLE.parent.glob("*.json")), ids=lambda p: p.stem)
def test_shipped_descriptions_write_money_as_people_read_it(path: Path) -> None:
    """The demo prints a scenario's description to the people it is for: R$ 1.234,56."""
    description = load_scenario(path).description or ""
    assert not re.search(r"R\$ ?\d+\.\d{2}\b", description), description
