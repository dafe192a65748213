"""The Prometheus alerting rules (``docs/alerts.yml``): promtool accepts them and their unit
tests (``docs/alerts.test.yml``) pass, every alert is tested firing and says what to do,
and every metric they read is one the README documents.

promtool (Debian's ``prometheus`` package) is required under CI (``CI=true``); elsewhere
the tests that run it are skipped without it."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import service_missing

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "docs" / "alerts.yml"
RULE_TESTS = ROOT / "docs" / "alerts.test.yml"
README = ROOT / "README.md"

METRIC = re.compile(r"\b(?:pixrecon|dramatiq)_[a-z_]+")
# Series a histogram or summary is scraped as, besides the name the README gives it.
SERIES_SUFFIXES = ("_bucket", "_sum", "_count")
SEVERITIES = frozenset({"critical", "warning", "info"})


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        service_missing("promtool", "no promtool binary; apt-get install -y prometheus")
        raise AssertionError("unreachable")
    return found


def run_promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [promtool(), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def alerting_rules() -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    for group in load(RULES)["groups"]:
        rules.extend(rule for rule in group["rules"] if "alert" in rule)
    return rules


def metric_name(series: str) -> str:
    for suffix in SERIES_SUFFIXES:
        if series.endswith(suffix):
            return series.removesuffix(suffix)
    return series


def metrics_in(text: str) -> set[str]:
    return {metric_name(found) for found in METRIC.findall(text)}


def test_promtool_accepts_the_rules() -> None:
    result = run_promtool("check", "rules", str(RULES.relative_to(ROOT)))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_rules_pass_their_unit_tests() -> None:
    result = run_promtool("test", "rules", str(RULE_TESTS.relative_to(ROOT)))
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_has_a_severity_and_says_what_to_do() -> None:
    rules = alerting_rules()
    assert rules
    for rule in rules:
        name = rule["alert"]
        assert rule.get("labels", {}).get("severity") in SEVERITIES, name
        annotations = rule.get("annotations", {})
        for key in ("summary", "description", "runbook"):
            assert str(annotations.get(key, "")).strip(), f"{name} has no {key}"
        assert "\n" not in annotations["runbook"].strip(), f"{name}: the runbook is one line"


def test_every_alert_has_a_test_that_fires_it() -> None:
    names = [rule["alert"] for rule in alerting_rules()]
    assert len(names) == len(set(names)), "alert names are unique"
    fired: set[str] = set()
    tested: set[str] = set()
    for case in load(RULE_TESTS)["tests"]:
        for check in case.get("alert_rule_test", []):
            tested.add(check["alertname"])
            if check.get("exp_alerts"):
                fired.add(check["alertname"])
    assert sorted(set(names) - fired) == [], "alerts without a test where they fire"
    assert sorted(tested - set(names)) == [], "tests of alerts that do not exist"


def test_every_metric_the_rules_read_is_documented_in_the_readme() -> None:
    used: set[str] = set()
    for rule in alerting_rules():
        used |= metrics_in(rule["expr"])
    assert used, "the rules read pixrecon's metrics"
    documented = metrics_in(README.read_text(encoding="utf-8"))
    assert sorted(used - documented) == [], "metrics the alerts read but README.md does not list"


@pytest.mark.parametrize(
    ("series", "metric"),
    [
        ("pixrecon_webhook_ack_seconds_bucket", "pixrecon_webhook_ack_seconds"),
        ("pixrecon_items_processed_total", "pixrecon_items_processed_total"),
        ("dramatiq_message_duration_milliseconds_count", "dramatiq_message_duration_milliseconds"),
    ],
)
def test_series_names_are_read_as_their_metric(series: str, metric: str) -> None:
    assert metrics_in(f"rate({series}[5m])") == {metric}
