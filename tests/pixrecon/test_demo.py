"""``pixrecon demo``: the shipped business day end to end as a new user runs it (a process
of its own, 80 columns), its self-check shown to catch what it claims to, and its refusals."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.progress import Progress

from pixrecon.demo.checks import Check, Section, checks_table, self_checks
from pixrecon.demo.day import DemoError, PlayedDay, check_empty, played_day
from pixrecon.demo.run import DemoOptions, prepare
from tests.cli_support import clean_env, run_pixrecon, table_row

EXAMPLES = Path(__file__).parents[2] / "examples" / "scenarios"
BRL = r"-?R\$ \d{1,3}(?:\.\d{3})*,\d{2}"


def test_the_demo_plays_a_whole_business_day_within_a_minute(tmp_path: Path) -> None:
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "pixrecon", "demo"],
        cwd=tmp_path,
        env={**clean_env(), "COLUMNS": "80"},
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    elapsed = time.monotonic() - started
    out = result.stdout
    assert result.returncode == 0, out[-3000:] + result.stderr[-3000:]
    assert elapsed < 60
    assert (tmp_path / "pixrecon-demo.db").exists()
    assert "Reconciliation of 02/03/2026" in out
    assert "breaks: exceptions remain" in out

    # The bridge, with money going out as well as coming in.
    report, check = out.split("the demo's own check", 1)
    assert "From the opening to the closing balance" in report
    for label in ("- refunds sent", "- payouts", "- MED debits", "- fees", "+ Pix received"):
        statement = table_row(report, label)[3]
        assert re.fullmatch(BRL, statement), (label, statement)
        assert statement != "R$ 0,00", label
    # Exceptions with how much, why, and what to do.
    assert "→ ask the payer for the missing R$ 9,90" in report
    assert "→ refund the R$ 5,00 paid over the R$ 45,00 due" in report

    # Every self-check line agrees; each compares like with like.
    marked = [line for line in check.splitlines() if line.rstrip().endswith(("✓ │", "✗ │"))]
    assert len(marked) == 17
    assert all(line.rstrip().endswith("✓ │") for line in marked), marked
    assert "✗" not in out
    for label in ("opening balance", "closing balance", "refunds sent and MED debits", "payouts"):
        got, want = table_row(check, label)[1:3]
        assert re.fullmatch(BRL, got), label
        assert got == want, label
    assert table_row(check, "closing balance")[1] == table_row(report, "closing balance")[3]
    assert "every figure agrees with the sandbox" in out
    lines = check.splitlines()
    assert "…" not in check
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]

    # README's excerpt is what the demo prints, line for line.
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    excerpt = readme.split("```text\nReconciliation of", 1)[1].split("```", 1)[0]
    printed = {line.rstrip() for line in out.splitlines()}
    shown = [line for line in ("Reconciliation of" + excerpt).splitlines() if line != "…"]
    assert len(shown) > 30
    assert [line for line in shown if line not in printed] == []


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlayedDay]:
    """The shipped day played in this process, to tamper with what the check compares."""
    scenario, day = prepare(DemoOptions())
    database = tmp_path_factory.mktemp("demo") / "demo.db"
    quiet = Console(quiet=True)
    with (
        Progress(console=quiet) as progress,
        played_day(
            scenario, day, database_url=f"sqlite:///{database}", progress=progress
        ) as played,
    ):
        yield played


def _failing(checks: list[Check]) -> set[str]:
    return {check.label for check in checks if not check.ok}


def test_the_self_check_agrees_and_catches_a_figure_that_does_not(played: PlayedDay) -> None:
    checks = self_checks(played.engine, played.result, played.outcome)
    assert checks.ok, [c for c in checks.all if not c.ok]

    # A centavo more in the sandbox's closing balance, a Pix more that no webhook
    # announced, a MED debit that never was: each is caught by its own line.
    outcome = played.outcome
    tampered = dataclasses.replace(
        outcome,
        closing_balance_cents=outcome.closing_balance_cents + 1,
        infractions=tuple(case for case in outcome.infractions if not case.debited),
    )
    caught = self_checks(played.engine, played.result, tampered)
    assert not caught.ok
    assert _failing(caught.all) == {"closing balance", "MED money debited"}

    report: dict[str, Any] = played.result.report
    fees = next(row for row in report["bridge"]["categories"] if row["category"] == "fees")
    fees["statement_cents"] += 100
    try:
        assert _failing(self_checks(played.engine, played.result, outcome).all) == {"provider fees"}
    finally:
        fees["statement_cents"] -= 100


def test_the_check_tables_fit_80_columns_with_big_figures() -> None:
    section = Section(
        "Money",
        (
            Check("closing balance", 1_234_567_890_12, 1_234_567_890_12, money=True),
            Check("payouts", None, 0, money=True),  # pixrecon could not tell: never agrees
            Check("acknowledged items, each stored", 123_456, 123_456),
        ),
    )
    console = Console(width=80, record=True, color_system=None)
    console.print(checks_table(section))
    text = console.export_text()
    assert "…" not in text
    assert all(len(line) <= 80 for line in text.splitlines())
    assert re.search(
        r"closing balance +│ R\$ 1\.234\.567\.890,12 │ R\$ 1\.234\.567\.890,12 │ ✓", text
    )
    assert re.search(r"payouts +│ +— │ +R\$ 0,00 │ ✗", text)
    # A label wraps before a figure does.
    assert re.search(r"acknowledged items, each +│ +123\.456 │ +123\.456 │ ✓", text)


def test_a_day_not_over_is_refused_and_any_earlier_day_is_played(tmp_path: Path) -> None:
    today = date(2026, 11, 25)
    with pytest.raises(DemoError, match="25/11/2026 is not"):
        prepare(DemoOptions(day=today), today=today)
    scenario, day = prepare(DemoOptions(day=date(2026, 11, 24), seed=5), today=today)
    assert (day, scenario.seed, scenario.name) == (date(2026, 11, 24), 5, "business-day")
    # A scenario without a date of its own plays yesterday's.
    undated = tmp_path / "undated.json"
    text = (EXAMPLES / "fees.json").read_text(encoding="utf-8")
    undated.write_text(text.replace('"date": "2026-03-03",', ""), encoding="utf-8")
    scenario, day = prepare(DemoOptions(scenario=undated), today=today)
    assert (scenario.name, scenario.date, day) == ("fees", None, date(2026, 11, 24))


def test_another_scenario_on_another_day(tmp_path: Path) -> None:
    ran = run_pixrecon(
        "demo",
        "--scenario",
        str(EXAMPLES / "refunds.json"),
        "--date",
        "2026-05-04",
        "--seed",
        "11",
        cwd=tmp_path,
        env={**clean_env(), "COLUMNS": "100"},
        timeout=90,
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert "pixrecon demo: refunds on 04/05/2026" in ran.stdout
    assert "Reconciliation of 04/05/2026" in ran.stdout
    assert "every figure agrees with the sandbox" in ran.stdout


def test_fees_netted_from_their_pix_agree_with_the_sandbox(tmp_path: Path) -> None:
    """Netted, a fee has no line of its own: the bridge shows the Pix gross and the fee
    apart, and the self-check must compare like with like (it once reported both as
    discrepancies, and exit 1, on a day that reconciled)."""
    netted = tmp_path / "netted.json"
    text = (EXAMPLES / "fees.json").read_text(encoding="utf-8")
    assert '"booking": "line"' in text
    netted.write_text(text.replace('"booking": "line"', '"booking": "netted"'), encoding="utf-8")
    ran = run_pixrecon("demo", "--scenario", str(netted), cwd=tmp_path, env=clean_env(), timeout=90)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert "every figure agrees with the sandbox" in ran.stdout


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--date", "2026-13-01"), "--date '2026-13-01' is not a day (there is no month 13)"),
        (("--date", "2999-01-01"), "choose an earlier --date"),
        (("--scenario", "nowhere.json"), "nowhere.json: invalid scenario"),
        (("--database-url", "mysql://u@127.0.0.1/x"), "'mysql' is not supported"),
        (("--database-url", "nonsense"), "--database-url='nonsense': not a database URL"),
        (
            ("--database-url", "postgresql://u@127.0.0.1:1/x"),
            "cannot use the database at postgresql://u@127.0.0.1:1/x",
        ),
    ],
)
def test_the_demo_says_in_one_line_why_it_cannot_run(
    tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    ran = run_pixrecon("demo", *args, cwd=tmp_path)
    assert ran.returncode == 2
    assert said in ran.stderr
    # Nothing of the day is introduced that will not be played.
    assert ran.stdout == ""
    assert len(ran.stderr.strip().splitlines()) == 1, ran.stderr
    assert "Traceback" not in ran.stderr
    assert not (tmp_path / "pixrecon-demo.db").exists()


def test_a_database_that_already_holds_a_day_is_refused(played: PlayedDay) -> None:
    # Played again with the same seed, every notification would count twice.
    with pytest.raises(DemoError, match=r"needs an empty database, and this one already holds \d+"):
        check_empty(played.engine)


@pytest.mark.postgres
def test_the_demo_on_an_empty_migrated_postgresql_database(
    postgres_database_url: str, tmp_path: Path
) -> None:
    args = ["demo", "--scenario", str(EXAMPLES / "fees.json")]
    args += ["--database-url", postgres_database_url]
    first = run_pixrecon(*args, cwd=tmp_path, timeout=90)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    assert "every figure agrees with the sandbox" in first.stdout
    assert not (tmp_path / "pixrecon-demo.db").exists()
    again = run_pixrecon(*args, cwd=tmp_path, timeout=90)
    assert again.returncode == 2
    assert "needs an empty database" in again.stderr
    assert again.stdout == ""


EDGES = Path(__file__).parents[1] / "fixtures" / "scenarios" / "edges"


@pytest.mark.parametrize("scenario", sorted(p.name for p in EDGES.glob("*.json")))
def test_edge_days_agree_with_the_sandbox(tmp_path: Path, scenario: str) -> None:
    """Days that once gave a figure the sandbox's books contradict: a Pix eaten by its fee
    on the day's first or last line, MED debits matched by amount beside other cases, a
    quiet day, a day whose only line is booked after midnight, a balance above the largest
    Pix amount and a charge that expires at midnight."""
    ran = run_pixrecon(
        "demo", "--scenario", str(EDGES / scenario), cwd=tmp_path, env=clean_env(), timeout=120
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert "every figure agrees with the sandbox" in ran.stdout
    assert "reconciled: every source was read and agrees" in ran.stdout


def test_a_day_whose_only_pix_is_booked_past_the_date_lag_breaks(tmp_path: Path) -> None:
    """The statement was read and holds nothing of the day: the Pix is a break the day
    names with the instant it was due by, not a source that could not be read."""
    scenario = (
        Path(__file__).parents[1] / "fixtures" / "scenarios" / "breaks" / "booked-too-late.json"
    )
    ran = run_pixrecon(
        "demo", "--scenario", str(scenario), cwd=tmp_path, env=clean_env(), timeout=120
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert "every figure agrees with the sandbox" in ran.stdout
    assert "breaks: exceptions remain" in ran.stdout
    # The table wraps the reason inside its cell.
    assert "had not booked it by" in ran.stdout
    assert "04/03/2026 00:05" in ran.stdout
