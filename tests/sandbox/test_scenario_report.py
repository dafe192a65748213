"""The ground truth as people read it: Brazilian conventions, in 80 columns, nothing cut
short; and the sandbox's own money format agrees with pixrecon's."""

from __future__ import annotations

import re
from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from reconcile import formats
from sandbox.scenario import ScenarioOutcome, load_scenario
from sandbox.scenario.report import br_date, brl, render_outcome
from sandbox.server import BackgroundServer
from tests.sandbox.scenario_support import EXAMPLE, Recorder, play
from tests.sandbox.scenario_support import recorder_server as recorder_server

MIDNIGHT = EXAMPLE.parent / "midnight.json"
BRL = re.compile(r"-?R\$ \d{1,3}(?:\.\d{3})*,\d{2}")


@given(st.integers(min_value=-(10**15), max_value=10**15))
def test_brl_agrees_with_reconcile(cents: int) -> None:
    assert brl(cents) == formats.brl(cents)


@given(st.dates())
def test_br_date_agrees_with_reconcile(day: date) -> None:
    assert br_date(day) == formats.br_date(day)


@pytest.mark.parametrize(
    ("cents", "text"),
    [(0, "R$ 0,00"), (5, "R$ 0,05"), (-275390, "-R$ 2.753,90"), (22918250, "R$ 229.182,50")],
)
def test_brl_examples(cents: int, text: str) -> None:
    assert brl(cents) == text


def _render(outcome: ScenarioOutcome, width: int) -> str:
    console = Console(width=width, record=True, force_terminal=False, color_system=None)
    console.print(render_outcome(outcome))
    return console.export_text()


@pytest.fixture(scope="module")
def outcomes(recorder_server: tuple[Recorder, BackgroundServer]) -> dict[str, ScenarioOutcome]:
    recorder, server = recorder_server
    played: dict[str, ScenarioOutcome] = {}
    for path in (EXAMPLE, MIDNIGHT):
        recorder.reset()
        played[path.stem] = play(load_scenario(path), server)[0]
    return played


def test_the_example_day_fits_80_columns_whole(outcomes: dict[str, ScenarioOutcome]) -> None:
    outcome = outcomes["business-day"]
    text = _render(outcome, 80)
    lines = text.splitlines()
    assert "…" not in text
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    # Money as R$ 1.234,56, the day as 02/03/2026.
    assert "business-day — 02/03/2026" in text
    for figure in ("R$ 2.500,00", "R$ 3.733,90", "R$ 1.867,87", "R$ 155,00", "R$ 4.366,03"):
        assert figure in text
    assert "-R$ 800,00" in text  # a payout, signed
    assert not re.search(r"\d\.\d\d\b", BRL.sub("", text))  # as 2,753.90 was
    # Every identifier is on a line of its own, whole: endToEndIds, txids, refs.
    words = set(text.replace("│", " ").split())
    for m in outcome.movements:
        assert m.ref in words
        assert m.key in words
    for p in outcome.payments:
        assert p.txid in words
    for n in outcome.notifications:
        for key in n.keys:
            # A long key breaks after a ':', never inside the identifiers it joins.
            for part in key.split(":"):
                assert any(part in word for word in words), (key, part)


def test_a_pix_booked_after_midnight_says_so(outcomes: dict[str, ScenarioOutcome]) -> None:
    text = _render(outcomes["midnight"], 80)
    assert "midnight — 07/03/2026" in text
    assert re.search(r"23:59:30 .*\n.*00:00:30 .*\n.*next day", text)
    assert "balance with next-day lines" in text


@pytest.mark.parametrize("width", [40, 60, 100])
def test_at_any_width_nothing_is_cut_short(
    outcomes: dict[str, ScenarioOutcome], width: int
) -> None:
    text = _render(outcomes["business-day"], width)
    assert "…" not in text
    assert all(len(line) <= width for line in text.splitlines())
