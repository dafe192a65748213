"""Scripted business days: a JSON scenario applied to the sandbox, its notifications
delivered with faults, and the ground truth returned for tests (``docs/scenarios.md``).

    scenario = load_scenario("examples/scenarios/business-day.json")
    provider = scenario_provider(scenario)
    outcome = run_scenario(scenario, provider, qrcode_webhook_url=..., accounts_webhook_url=...)
"""

from sandbox.scenario.clock import ScenarioClock
from sandbox.scenario.identity import identities_of, notification_identity
from sandbox.scenario.loader import ScenarioError, load_scenario, loads_scenario, parse_scenario
from sandbox.scenario.model import BUSINESS_TZ, Scenario, day_bounds
from sandbox.scenario.outcome import (
    ApiFaultRecord,
    DayTotals,
    ExpectedPayment,
    InfractionRecord,
    Movement,
    NotificationRecord,
    RecurrenceCycle,
    ScenarioOutcome,
)
from sandbox.scenario.runner import run_scenario, scenario_provider

__all__ = [
    "BUSINESS_TZ",
    "ApiFaultRecord",
    "DayTotals",
    "ExpectedPayment",
    "InfractionRecord",
    "Movement",
    "NotificationRecord",
    "RecurrenceCycle",
    "Scenario",
    "ScenarioClock",
    "ScenarioError",
    "ScenarioOutcome",
    "day_bounds",
    "identities_of",
    "load_scenario",
    "loads_scenario",
    "notification_identity",
    "parse_scenario",
    "run_scenario",
    "scenario_provider",
]
