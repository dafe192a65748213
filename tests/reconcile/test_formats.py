"""Durations as people read them: a few digits in the unit that fits, Brazilian commas;
dates as dd/mm/yyyy."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reconcile.formats import br_date, duration, duration_unit


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "—"),
        (1.5, "1,5 s"),
        (119.9, "119,9 s"),
        (120, "2,0 min"),
        (745, "12,4 min"),
        (7200, "2,0 h"),
        (18360, "5,1 h"),
        (172800, "2 days"),
        (268 * 86400 + 3600, "268 days"),
        (1500 * 86400, "1.500 days"),
    ],
)
def test_duration_examples(seconds: float | None, text: str) -> None:
    assert duration(seconds) == text


@given(st.floats(min_value=0, max_value=10 * 365 * 86400))
def test_a_duration_reads_back_to_its_seconds(seconds: float) -> None:
    unit, name = duration_unit(seconds)
    shown, shown_name = duration(seconds).split(" ")
    assert shown_name == name
    value = float(shown.replace(".", "").replace(",", "."))
    # Days are whole, the smaller units to a tenth: never off by more than that.
    assert abs(value * unit - seconds) <= (0.5 if name == "days" else 0.05) * unit + 1e-9


@given(st.dates())
def test_a_date_is_always_day_month_and_four_digits_of_year(day: date) -> None:
    shown = br_date(day)
    assert len(shown) == 10
    assert date(int(shown[6:]), int(shown[3:5]), int(shown[:2])) == day
