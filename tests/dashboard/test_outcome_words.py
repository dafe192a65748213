"""A verdict is written in words on every page: the day's outcome tables name each status
as the Exceptions list, its filter and a case's page do ("missing webhook", not
"missing_webhook"), with the figure still keyed by the status itself."""

from __future__ import annotations

from dashboard.web import make_templates


def test_the_days_outcomes_name_each_status_in_words() -> None:
    macros = make_templates().env.get_template("_macros.html").make_module({})
    shown = str(
        macros.outcomes("Payouts", {"unknown_to_provider": 1, "settled": 2}, "payouts")  # type: ignore[attr-defined]
    )
    assert '<th scope="row">unknown to provider</th>' in shown, shown
    assert '<th scope="row">settled</th>' in shown, shown
    assert 'data-figure="payouts.unknown_to_provider"' in shown, shown
    assert "unknown_to_provider<" not in shown, shown
