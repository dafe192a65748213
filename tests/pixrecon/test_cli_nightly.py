"""``pixrecon reconcile`` and ``pixrecon exceptions`` as a finance team runs them."""

from __future__ import annotations

import csv
import json
import os
import shutil
from collections.abc import Iterator
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from pixrecon.sandbox_wiring import sandbox_servers, sandbox_settings
from reconcile.db import create_db_engine
from reconcile.nightly import reconcile_day
from reconcile.timeutil import BUSINESS_TZ, business_day_bounds, utcnow
from sandbox.state import SandboxProvider
from tests.cli_support import clean_env, run_pixrecon
from tests.reconcile.day_book import DayBook


@pytest.fixture
def provider() -> SandboxProvider:
    return SandboxProvider(seed=33)


def _migrated(template: Path, path: Path) -> str:
    """A database the command can open: only ``serve``, ``demo`` and ``db upgrade``
    create one."""
    shutil.copy(template, path)
    return f"sqlite:///{path}"


@pytest.fixture
def env(
    provider: SandboxProvider, tmp_path: Path, sqlite_template: Path
) -> Iterator[dict[str, str]]:
    with sandbox_servers(provider) as urls:
        yield {
            **{k: v for k, v in os.environ.items() if not k.startswith("PIXRECON_")},
            "PIXRECON_DATABASE_URL": _migrated(sqlite_template, tmp_path / "nightly.db"),
            # A provider that fails here fails fast (the default rides out minutes).
            "PIXRECON_PROVIDER_RETRY_SECONDS": "1",
            **sandbox_settings(urls),
        }


def _today() -> str:
    return utcnow().astimezone(BUSINESS_TZ).date().isoformat()


def test_a_clean_day_exits_zero_with_the_documented_json(
    provider: SandboxProvider, env: dict[str, str], tmp_path: Path
) -> None:
    provider.create_cob(Decimal("10.00"), txid="nightlycleanday00000000000001")
    provider.pay_charge("nightlycleanday00000000000001")
    provider.receive_pix(Decimal("5.00"))
    result = run_pixrecon(
        "reconcile", "--date", _today(), "--format", "json", env=env, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr + result.stdout
    report = json.loads(result.stdout)
    assert {"date", "counts", "charges", "totals", "balance_drift_cents"} <= report.keys()
    assert report["date"] == _today()
    assert report["verdict"] == "reconciled", report
    assert report["provisional"] is True, "today is not over"
    assert report["bridge"]["residual_cents"] == 0
    assert report["charges"] == {"paid": 1}
    # Found by polling, nothing notified them: counted, not exceptions.
    assert report["counts"]["missing_webhook"] == 2
    assert report["totals"]["credits"]["statement"] == 1500
    assert report["balance_drift_cents"] == 0


def test_exceptions_give_exit_one_export_and_a_resolution_sticks(
    provider: SandboxProvider, env: dict[str, str], tmp_path: Path
) -> None:
    provider.create_cob(Decimal("80.00"), txid="nightlyunderpaid0000000000001")
    provider.pay_charge("nightlyunderpaid0000000000001", Decimal("79.99"))
    exported = tmp_path / "exceptions.csv"
    result = run_pixrecon(
        "reconcile", "--date", _today(), "--export", "csv", str(exported), env=env, cwd=tmp_path
    )
    assert result.returncode == 1, result.stderr + result.stdout
    assert "underpaid" in result.stdout
    with exported.open(encoding="utf-8") as handle:
        (row,) = list(csv.DictReader(handle))
    # Reais with a dot in the plain CSV (docs/exports.md), and a key an ERP posts once.
    assert (row["subject"], row["status"], row["expected"], row["actual"]) == (
        "charge",
        "underpaid",
        "80.00",
        "79.99",
    )
    assert row["key"] == f"exc:{row['date']}:charge:{row['ref']}:underpaid"

    listed = json.loads(
        run_pixrecon("exceptions", "--format", "json", env=env, cwd=tmp_path).stdout
    )
    assert [c["status"] for c in listed] == ["underpaid"]
    resolved = run_pixrecon(
        "exceptions",
        "resolve",
        str(listed[0]["id"]),
        "--note",
        "customer paid the cent",
        env=env,
        cwd=tmp_path,
    )
    assert resolved.returncode == 0, resolved.stderr
    case_id = str(listed[0]["id"])
    assert f"case {case_id} is now resolved (was open)" in resolved.stdout

    # Resolved is explained, not agreed: the day still breaks, with nothing left open.
    again = run_pixrecon("reconcile", "--date", _today(), "--format", "json", env=env, cwd=tmp_path)
    assert again.returncode == 1, again.stderr
    report = json.loads(again.stdout)
    assert report["charges"] == {"underpaid": 1}
    assert (report["verdict"], report["open_exceptions"], report["exceptions_found"]) == (
        "breaks",
        0,
        1,
    )
    told = run_pixrecon("reconcile", "--date", _today(), env=env, cwd=tmp_path)
    assert "each case resolved by a person" in " ".join(told.stdout.split())
    assert (
        json.loads(run_pixrecon("exceptions", "--format", "json", env=env, cwd=tmp_path).stdout)
        == []
    )
    # Resolved is done: resolving it again, or acknowledging it, is refused in one line
    # and changes nothing — neither its note nor its history.
    for again_args, said in (
        (("resolve", case_id, "--note", "another story"), "is already resolved: nothing changed"),
        (("ack", case_id, "--note", "on it"), f"exceptions reopen {case_id}"),
    ):
        refused = run_pixrecon("exceptions", *again_args, env=env, cwd=tmp_path)
        assert refused.returncode == 2, refused.stdout
        assert said in " ".join(refused.stderr.split())
        assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert refused.stdout == ""
    kept = json.loads(
        run_pixrecon("exceptions", "--all", "--format", "json", env=env, cwd=tmp_path).stdout
    )
    assert [(c["state"], c["note"]) for c in kept] == [("resolved", "customer paid the cent")]
    # Reopening puts it back among the remaining ones, and says so.
    reopened = run_pixrecon("exceptions", "reopen", case_id, env=env, cwd=tmp_path)
    assert reopened.returncode == 0, reopened.stderr
    assert f"case {case_id} was resolved; it is open now, remaining again" in " ".join(
        reopened.stdout.split()
    )
    not_closed = run_pixrecon("exceptions", "reopen", case_id, env=env, cwd=tmp_path)
    assert not_closed.returncode == 2
    assert "nothing to reopen" in not_closed.stderr
    acked = run_pixrecon("exceptions", "ack", case_id, env=env, cwd=tmp_path)
    assert f"case {case_id} is now acknowledged (was open)" in " ".join(acked.stdout.split())
    twice = run_pixrecon("exceptions", "ack", case_id, "--note", "x", env=env, cwd=tmp_path)
    assert f"case {case_id} was already acknowledged; its note is the one given now" in " ".join(
        twice.stdout.split()
    )
    # Who did what, and when: every action, oldest first, the replaced note kept too.
    history = run_pixrecon(
        "exceptions", "history", case_id, "--format", "json", env=env, cwd=tmp_path
    )
    assert history.returncode == 0, history.stderr
    events = json.loads(history.stdout)
    assert [(e["action"], e["previous_state"], e["note"]) for e in events] == [
        ("resolve", "open", "customer paid the cent"),
        ("reopen", "resolved", None),
        ("acknowledge", "open", None),
        ("acknowledge", "acknowledged", "x"),
    ]
    assert all(e["actor"].startswith("cli:") for e in events)
    shown = run_pixrecon("exceptions", "history", case_id, env=env, cwd=tmp_path)
    words = " ".join(shown.stdout.split())
    assert f"Case {case_id}" in words
    assert "São Paulo" in words
    unknown = run_pixrecon("exceptions", "history", "999999", env=env, cwd=tmp_path)
    assert unknown.returncode == 2
    assert "no exception case 999999" in unknown.stderr


def test_without_a_provider_the_day_is_incomplete_never_reconciled(
    tmp_path: Path, sqlite_template: Path
) -> None:
    env = clean_env(database_url=_migrated(sqlite_template, tmp_path / "alone.db"))
    result = run_pixrecon(
        "reconcile", "--date", _today(), "--format", "json", env=env, cwd=tmp_path
    )
    assert result.returncode == 2, result.stderr
    report = json.loads(result.stdout)
    assert report["verdict"] == "incomplete"
    assert "no provider API is configured" in " ".join(report["incomplete_because"])
    table = run_pixrecon("reconcile", "--date", _today(), env=env, cwd=tmp_path)
    assert table.returncode == 2
    assert "incomplete" in table.stdout
    assert "Traceback" not in table.stderr


def test_a_day_that_cannot_be_fetched_exits_two(env: dict[str, str], tmp_path: Path) -> None:
    broken = {**env, "PIXRECON_QRCODE_API_URL": "http://127.0.0.1:1"}
    result = run_pixrecon("reconcile", "--date", _today(), env=broken, cwd=tmp_path)
    assert result.returncode == 2
    assert "could not run" in result.stderr
    # It says what it was fetching when the provider gave out, and for how long it tried.
    assert "while fetching Pix received" in result.stderr
    assert "PIXRECON_PROVIDER_RETRY_SECONDS" in result.stderr
    bad_date = run_pixrecon("reconcile", "--date", "22/11/2026", env=env, cwd=tmp_path)
    assert bad_date.returncode == 2


def test_an_unexpected_error_is_exit_two_in_one_line_never_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sqlite_template: Path
) -> None:
    import logging

    import structlog
    from typer.testing import CliRunner

    from pixrecon.cli import app
    from pixrecon.commands import reconcile as command
    from reconcile.settings import get_settings

    def broken(*_args: object, **_kwargs: object) -> None:
        raise KeyError("a bug of ours")

    monkeypatch.setattr(command, "reconcile_day", broken)
    crash_db = _migrated(sqlite_template, tmp_path / "crash.db")
    for name, value in clean_env(database_url=crash_db).items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    # The command configures logging onto the runner's streams, closed after it: give the
    # rest of this test process its logging back.
    saved, handlers = structlog.get_config(), logging.getLogger().handlers[:]
    try:
        result = CliRunner().invoke(app, ["reconcile", "--date", _today(), "--no-poll"])
    finally:
        get_settings.cache_clear()
        structlog.configure(**saved)
        logging.getLogger().handlers[:] = handlers
    assert result.exit_code == 2, result.output
    assert "unexpected error (KeyError" in result.output
    assert "Traceback" not in result.output
    assert not isinstance(result.exception, KeyError)


def test_a_setting_it_cannot_take_is_one_line_and_exit_two(tmp_path: Path) -> None:
    env = clean_env(database_url=f"sqlite:///{tmp_path / 'x.db'}", confirm_policy="maybe")
    result = run_pixrecon("reconcile", "--date", _today(), env=env, cwd=tmp_path)
    assert result.returncode == 2
    assert "PIXRECON_CONFIRM_POLICY='maybe'" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_a_secret_it_cannot_take_is_named_but_never_shown(tmp_path: Path) -> None:
    """A wrong secret is still somebody's secret: the line names the variable and what it
    must be, never its value."""
    secret = "short-but-real-Secret"
    env = clean_env(database_url=f"sqlite:///{tmp_path / 'x.db'}", dashboard_secret=secret)
    result = run_pixrecon("reconcile", "--date", _today(), env=env, cwd=tmp_path)
    assert result.returncode == 2
    assert f"PIXRECON_DASHBOARD_SECRET=(hidden, {len(secret)} characters)" in result.stderr
    assert secret not in result.stderr + result.stdout


def test_a_day_still_going_says_its_answer_is_provisional(
    env: dict[str, str], tmp_path: Path
) -> None:
    today = run_pixrecon("reconcile", "--date", _today(), env=env, cwd=tmp_path)
    assert "The day is not over: this answer is provisional." in today.stdout
    yesterday = (date.fromisoformat(_today()) - timedelta(days=1)).isoformat()
    over = run_pixrecon("reconcile", "--date", yesterday, "--format", "json", env=env, cwd=tmp_path)
    assert json.loads(over.stdout)["provisional"] is False
    text = run_pixrecon("reconcile", "--date", yesterday, env=env, cwd=tmp_path)
    assert "provisional" not in text.stdout


def test_the_exceptions_list_gives_the_most_urgent_first(
    tmp_path: Path, sqlite_template: Path
) -> None:
    """Money whose last day to be refunded has passed comes before a larger exception of
    the same day, in the list a person works from today."""
    url = _migrated(sqlite_template, tmp_path / "queue.db")
    engine = create_db_engine(url)
    past = date(2026, 3, 10)
    book = DayBook(engine, past)
    unbooked = book.pix(9_000, "11:00")
    book.confirm_all_pix()
    unnotified = "E99999999202603101200nobodysaid01"
    book.line("PIX_RECEIVED", 3_000, "12:00", credit=True, endToEndId=unnotified)
    reconcile_day(engine, past, now=business_day_bounds(past)[1] + timedelta(hours=2))
    engine.dispose()
    listed = json.loads(
        run_pixrecon(
            "exceptions", "--format", "json", env=clean_env(database_url=url), cwd=tmp_path
        ).stdout
    )
    assert [(c["ref"], c["priority"]) for c in listed] == [(unnotified, 1), (unbooked, 2)]


def test_the_exceptions_of_a_day_nothing_judged_are_not_an_empty_list(
    tmp_path: Path, sqlite_template: Path
) -> None:
    env = clean_env(database_url=_migrated(sqlite_template, tmp_path / "unjudged.db"))
    for output in ("table", "json"):
        listed = run_pixrecon(
            "exceptions", "--date", "2026-03-05", "--format", output, env=env, cwd=tmp_path
        )
        assert listed.returncode == 2, listed.stdout
        assert "2026-03-05 has no completed reconciliation run" in listed.stderr
        assert "No exceptions" not in listed.stdout
    ahead = run_pixrecon("exceptions", "--date", "2099-01-01", env=env, cwd=tmp_path)
    assert ahead.returncode == 2
    assert "has not begun yet" in ahead.stderr
