"""Every wrong request and every broken environment ends the same way, in every command: one
line on stderr saying what is wrong and what to do, exit code 2 — never a traceback, and
never a database created where none was asked for (README, "Exit codes")."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import uuid
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from migrations.apply import upgrade
from reconcile.db import create_db_engine
from tests.cli_support import clean_env, run_pixrecon
from tests.conftest import free_port

# (arguments, settings without the prefix, what the error line must say). Paths and ports
# in braces are filled in per run; the cases run concurrently to keep this file fast.
Case = tuple[tuple[str, ...], dict[str, str], str]
Outcomes = dict[str, tuple[subprocess.CompletedProcess[str], str]]

BUSINESS_DAY = Path(__file__).parents[2] / "pixrecon" / "demo" / "business-day.json"

CASES: dict[str, Case] = {
    # A usage error names the command whose --help tells the right usage.
    "option_missing_its_values": (
        ("reconcile", "--date", "2026-01-01", "--export", "csv"),
        {},
        "requires 2 arguments. (see `pixrecon reconcile --help`)",
    ),
    # Click's list of choices, one a line, comes as one line like every failure.
    "choices_on_one_line": (
        ("export", "--date", "2026-01-01", "--kind", "exceptions"),
        {},
        "Missing option '--format' / '-f'. Choose from: csv, jsonl, ofx "
        "(see `pixrecon export --help`)",
    ),
    "day_out_of_range": (
        ("reconcile", "--date", "0001-01-01"),
        {},
        "--date 0001-01-01 is outside the days pixrecon handles (1900-01-01 to 9998-12-31)",
    ),
    # Commands other than serve, demo and db upgrade never create a database.
    "events_no_database": (("events",), {}, "there is no database at {tmp}/pixrecon.db"),
    "show_no_database": (("events", "show", "1"), {}, "`pixrecon db upgrade`"),
    "exceptions_no_database": (
        ("exceptions",),
        {"database_url": "sqlite:///{tmp}/missing.db"},
        "point PIXRECON_DATABASE_URL at yours",
    ),
    # Migrated on one connection, missing its tables on the next: the demo once hung on it.
    "in_memory_database": (
        ("events",),
        {"database_url": "sqlite:///:memory:"},
        "PIXRECON_DATABASE_URL='sqlite:///:memory:' is an in-memory database, empty for every "
        "connection and gone when the command ends",
    ),
    "upgrade_in_memory": (("db", "upgrade"), {"database_url": "sqlite://"}, "in-memory database"),
    "demo_in_memory": (
        ("demo", "--database-url", "sqlite:///:memory:"),
        {},
        "--database-url='sqlite:///:memory:' is an in-memory database",
    ),
    "poll_no_database": (
        ("poll", "--since", "2026-01-01T00:00:00Z"),
        {
            "qrcode_api_url": "http://127.0.0.1:1",
            "qrcode_client_id": "id",
            "qrcode_client_secret": "secret",
        },
        "there is no database at",
    ),
    "folder_missing": (
        ("events",),
        {"database_url": "sqlite:///{tmp}/no/such/folder/x.db"},
        "{tmp}/no/such/folder, a folder that does not exist",
    ),
    "empty_database_file": (
        ("exceptions",),
        {"database_url": "sqlite:///{tmp}/empty.db"},
        "has no pixrecon tables yet: run `pixrecon db upgrade`",
    ),
    "server_unreachable": (
        ("events",),
        {"database_url": "postgresql://pixrecon:hunter2@127.0.0.1:1/pixrecon"},
        "cannot use the database at postgresql://pixrecon:***@127.0.0.1:1/pixrecon",
    ),
    "malformed_url": (
        ("exceptions", "ack", "1"),
        {"database_url": "not a url"},
        "PIXRECON_DATABASE_URL='not a url': not a database URL; expected sqlite:///PATH",
    ),
    "unsupported_dialect": (
        ("events",),
        {"database_url": "mysql://u@db/pixrecon"},
        "'mysql' is not supported; pixrecon runs on SQLite or PostgreSQL",
    ),
    "upgrade_unknown_revision": (
        ("db", "upgrade", "--revision", "nope"),
        {"database_url": "sqlite:///{tmp}/upgrade.db"},
        "cannot migrate to 'nope'",
    ),
    "upgrade_folder_missing": (
        ("db", "upgrade"),
        {"database_url": "sqlite:///{tmp}/absent/x.db"},
        "a folder that does not exist",
    ),
    # Settings: the variable, its value, what it must be.
    "setting_not_a_number": (
        ("events",),
        {"worker_threads": "four"},
        "PIXRECON_WORKER_THREADS='four': Input should be a valid integer",
    ),
    "setting_not_a_boolean": (
        ("exceptions",),
        {"scheduler_enabled": "maybe"},
        "PIXRECON_SCHEDULER_ENABLED='maybe': Input should be a valid boolean",
    ),
    "setting_by_its_former_name": (
        ("events",),
        {"poll_pix_interval_seconds": "soon"},
        "PIXRECON_POLL_PIX_INTERVAL_SECONDS='soon'",
    ),
    "setting_not_a_choice": (
        ("events",),
        {"log_level": "loud"},
        "PIXRECON_LOG_LEVEL='loud': Input should be 'DEBUG', 'INFO'",
    ),
    # The provider's APIs: refused at start, not after minutes of retrying a bad URL, and
    # never half configured (taken for "not configured" without a word).
    "setting_qrcode_url_malformed": (
        ("reconcile", "--date", "2026-01-01"),
        {"qrcode_api_url": "not-a-url", "qrcode_client_id": "id", "qrcode_client_secret": "s"},
        "PIXRECON_QRCODE_API_URL='not-a-url': not an http(s) URL; expected the API's base "
        "URL, https://HOST[:PORT][/PATH]",
    ),
    "setting_accounts_url_malformed": (
        ("reconcile", "--date", "2026-01-01"),
        {
            "accounts_api_url": "ftp://accounts.example",
            "accounts_client_id": "id",
            "accounts_client_secret": "s",
            "accounts_account_id": "a",
        },
        "PIXRECON_ACCOUNTS_API_URL='ftp://accounts.example': not an http(s) URL",
    ),
    "setting_qrcode_secret_missing": (
        ("reconcile", "--date", "2026-01-01"),
        {"qrcode_api_url": "https://qrcode.example", "qrcode_client_id": "id"},
        "PIXRECON_QRCODE_CLIENT_SECRET is not set, but PIXRECON_QRCODE_API_URL (or "
        "PIXRECON_PIX_API_URL, its former name) is",
    ),
    "setting_accounts_account_missing": (
        ("events",),
        {
            "accounts_api_url": "https://accounts.example",
            "accounts_client_id": "id",
            "accounts_client_secret": "s",
        },
        "PIXRECON_ACCOUNTS_ACCOUNT_ID is not set, but PIXRECON_ACCOUNTS_API_URL is",
    ),
    # Values a job would crash on at every run: refused when any command starts.
    "setting_infinite_interval": (
        ("events",),
        {"poll_qrcode_interval_seconds": "inf"},
        "PIXRECON_POLL_QRCODE_INTERVAL_SECONDS='inf': Input should be a finite number",
    ),
    "setting_interval_beyond_a_year": (
        ("events",),
        {"poll_initial_lookback_seconds": "1e15"},
        "PIXRECON_POLL_INITIAL_LOOKBACK_SECONDS='1e15': at most 31536000 seconds (a year)",
    ),
    "setting_retention_beyond_dates": (
        ("prune", "--dry-run"),
        {"retention_days": "99999999"},
        "PIXRECON_RETENTION_DAYS='99999999': at most 36500 days",
    ),
    "setting_account_id_not_ascii": (
        ("events",),
        {
            "accounts_api_url": "https://accounts.example",
            "accounts_client_id": "id",
            "accounts_client_secret": "s",
            "accounts_account_id": "conta-ç",
        },
        "it is sent as an HTTP header (x-account-id)",
    ),
    # Options: bad dates, windows, ports, choices, ids — the same one line everywhere.
    "id_beyond_any_row": (
        ("exceptions", "ack", "99999999999999999999"),
        {},
        "no exception case 99999999999999999999",
    ),
    "item_id_beyond_any_row": (
        ("events", "show", "99999999999999999999"),
        {},
        "no inbox item 99999999999999999999",
    ),
    # In the documented form, but no day of the calendar: said so, on every command that
    # takes a day, not "must be YYYY-MM-DD" (which it is).
    "exceptions_no_such_day": (
        ("exceptions", "--date", "2026-02-30"),
        {},
        "--date '2026-02-30' is not a day (February 2026 has 28 days)",
    ),
    "reconcile_no_such_day": (
        ("reconcile", "--date", "2024-02-30", "--no-poll"),
        {},
        "--date '2024-02-30' is not a day (February 2024 has 29 days)",
    ),
    "export_no_such_month": (
        ("export", "--date", "2026-13-01", "--kind", "exceptions", "--format", "csv"),
        {},
        "--date '2026-13-01' is not a day (there is no month 13)",
    ),
    "demo_no_such_day": (
        ("demo", "--date", "2026-04-31", "--database-url", "sqlite:///{tmp}/demo.db"),
        {},
        "--date '2026-04-31' is not a day (April 2026 has 30 days)",
    ),
    "sandbox_no_such_day": (
        ("sandbox", "--date", "2026-06-00", "--port", "0", "--accounts-port", "0"),
        {},
        "--date '2026-06-00' is not a day (days are numbered from 01)",
    ),
    "poll_no_such_day": (
        ("poll", "--since", "2026-02-29T10:00"),
        {},
        "--since '2026-02-29T10:00' is not a day (February 2026 has 28 days)",
    ),
    # Python reads 20261123 as a date too; only the documented form is accepted.
    "reconcile_basic_date": (
        ("reconcile", "--date", "20261123", "--no-poll"),
        {},
        "--date must be YYYY-MM-DD, got '20261123'",
    ),
    "exceptions_basic_date": (
        ("exceptions", "--date", "20261123"),
        {},
        "--date must be YYYY-MM-DD, got '20261123'",
    ),
    "export_basic_date": (
        ("export", "--date", "20261123", "--kind", "exceptions", "--format", "csv"),
        {},
        "--date must be YYYY-MM-DD, got '20261123'",
    ),
    "demo_basic_date": (
        ("demo", "--date", "20261123", "--database-url", "sqlite:///{tmp}/demo.db"),
        {},
        "--date must be YYYY-MM-DD, got '20261123'",
    ),
    "demo_folder_missing": (
        ("demo", "--database-url", "sqlite:///{tmp}/no/such/folder/demo.db"),
        {"database_url": "sqlite:///{tmp}/elsewhere.db"},
        "--database-url points into {tmp}/no/such/folder, a folder that does not exist",
    ),
    "sandbox_basic_date": (
        ("sandbox", "--date", "20261123", "--port", "0", "--accounts-port", "0"),
        {},
        "--date must be YYYY-MM-DD, got '20261123'",
    ),
    "sandbox_env_file_a_folder": (
        ("sandbox", "--env-file", "{tmp}", "--port", "0", "--accounts-port", "0"),
        {},
        "cannot write {tmp}: it is a folder: name a file, e.g. {tmp}/NAME",
    ),
    # Played to a URL nothing can be posted to, the day would reach nobody.
    "sandbox_webhook_url": (
        (
            *("sandbox", "--scenario", str(BUSINESS_DAY), "--qrcode-webhook-url", "notaurl"),
            *("--port", "0", "--accounts-port", "0"),
        ),
        {},
        "--qrcode-webhook-url must be the absolute URL where the receiver takes the "
        "scenario's notifications, such as http://127.0.0.1:8000/webhooks/qrcode; got 'notaurl'",
    ),
    "sandbox_port_busy": (
        ("sandbox", "--port", "0", "--accounts-port", "{busy_port}"),
        {},
        "port {busy_port} is already in use on 127.0.0.1: stop what listens there, or choose "
        "another --accounts-port",
    ),
    "sandbox_one_port_for_both": (
        ("sandbox", "--port", "{busy_port}", "--accounts-port", "{busy_port}"),
        {},
        "--port and --accounts-port are both {busy_port}: each API needs a port of its own",
    ),
    "replay_basic_since": (
        ("events", "replay", "--since", "20261123"),
        {},
        "--since '20261123' is not a date or time like 2026-11-22T14:30",
    ),
    "poll_bad_since": (
        ("poll", "--since", "yesterday"),
        {},
        "--since 'yesterday' is not a date or time like 2026-11-22T14:30",
    ),
    "poll_basic_since": (
        ("poll", "--since", "20261123T000000"),
        {},
        "--since '20261123T000000' is not a date or time like 2026-11-22T14:30",
    ),
    "poll_until_alone": (("poll", "--until", "2026-01-01T00:00:00Z"), {}, "--until needs --since"),
    "poll_window_backwards": (
        ("poll", "--since", "2026-01-02T00:00:00Z", "--until", "2026-01-01T00:00:00Z"),
        {},
        "--since must be earlier than --until",
    ),
    "serve_port_out_of_range": (
        ("serve", "--port", "70000"),
        {"webhook_secrets": "s"},
        "Invalid value for '--port'",
    ),
    "serve_port_busy": (
        ("serve", "--port", "{busy_port}"),
        {"webhook_secrets": "s", "database_url": "sqlite:///{tmp}/serve.db"},
        "port {busy_port} is already in use on 127.0.0.1",
    ),
    "serve_host_not_here": (
        ("serve", "--host", "192.0.2.1"),
        {"webhook_secrets": "s", "database_url": "sqlite:///{tmp}/serve.db"},
        "192.0.2.1 is not an address of this machine",
    ),
    "events_format": (("events", "--format", "xml"), {}, "Invalid value for '--format'"),
    "exceptions_format": (("exceptions", "-f", "xml"), {}, "'xml' is not one of 'table', 'json'"),
    "poll_format": (("poll", "--format", "xml"), {}, "Invalid value for '--format'"),
    "reconcile_format": (
        ("reconcile", "--date", "2026-01-01", "--format", "xml"),
        {},
        "Invalid value for '--format'",
    ),
    "register_format": (
        ("webhooks", "register", "--base-url", "https://x", "--format", "xml"),
        {},
        "Invalid value for '--format'",
    ),
    "events_status": (
        ("events", "--status", "done"),
        {},
        "'done' is not one of 'pending', 'processed', 'failed', 'unsupported', 'ignored'",
    ),
    "replay_kind": (
        ("events", "replay", "--kind", "bogus"),
        {},
        "'bogus' is not one of 'pix', 'pix_refund', 'rec', 'cobr', 'accounts.transfer',",
    ),
    "events_source": (("events", "--source", "email"), {}, "Invalid value for '--source'"),
    "events_limit": (("events", "--limit", "0"), {}, "Invalid value for '--limit'"),
    "id_not_a_number": (("events", "show", "abc"), {}, "Invalid value for 'ID'"),
    "unknown_option": (("events", "--colour"), {}, "No such option: --colour"),
    "unknown_command": (("reconcil",), {}, "No such command 'reconcil'"),
    "register_base_url": (
        ("webhooks", "register", "--base-url", "pix.example.com"),
        {},
        "--base-url must be the absolute URL",
    ),
    "register_unconfigured": (
        ("webhooks", "register", "--base-url", "https://pix.example.com"),
        {},
        "the QR code API is not configured",
    ),
    # The broker.
    "worker_without_broker": (("worker",), {}, "PIXRECON_BROKER_URL is not set"),
    "worker_bad_broker_url": (
        ("worker",),
        {"broker_url": "amqp://rabbit"},
        "PIXRECON_BROKER_URL='amqp://rabbit': not a Redis URL",
    ),
    # Every command, not only those that send: settings are checked when any starts.
    "exceptions_bad_broker_url": (
        ("exceptions",),
        {"broker_url": "http://x"},
        "PIXRECON_BROKER_URL='http://x': not a Redis URL",
    ),
    "worker_broker_unreachable": (
        ("worker",),
        {"broker_url": "redis://127.0.0.1:1/0"},
        "cannot reach the broker at PIXRECON_BROKER_URL",
    ),
}


def _fill(text: str, tmp: Path, busy_port: int) -> str:
    return text.replace("{tmp}", str(tmp)).replace("{busy_port}", str(busy_port))


def run_all(cases: Mapping[str, Case], tmp: Path, busy_port: int = 0) -> Outcomes:
    def one(case: Case) -> subprocess.CompletedProcess[str]:
        args, variables, _ = case
        filled = {k: _fill(v, tmp, busy_port) for k, v in variables.items()}
        env = clean_env(log_json="0", **filled)
        return run_pixrecon(*(_fill(a, tmp, busy_port) for a in args), cwd=tmp, env=env)

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = dict(zip(cases, pool.map(one, cases.values()), strict=True))
    return {name: (results[name], _fill(cases[name][2], tmp, busy_port)) for name in cases}


def assert_one_line(result: subprocess.CompletedProcess[str], says: str, code: int = 2) -> None:
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    assert result.returncode == code, output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert says in errors[0], errors[0]


@pytest.fixture(scope="module")
def outcomes(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, Outcomes]]:
    tmp = tmp_path_factory.mktemp("errors").resolve()
    (tmp / "empty.db").touch()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        yield tmp, run_all(CASES, tmp, busy.getsockname()[1])


# The first case runs every command (the module's fixture), four at a time: on a busy
# machine that is minutes, not the suite's usual limit.
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", list(CASES))
def test_each_error_is_one_line_and_exit_two(name: str, outcomes: tuple[Path, Outcomes]) -> None:
    result, says = outcomes[1][name]
    assert_one_line(result, says)


def test_no_command_created_a_database_it_was_not_asked_for(
    outcomes: tuple[Path, Outcomes],
) -> None:
    tmp = outcomes[0]
    for name in ("pixrecon.db", "missing.db", "serve.db"):
        assert not (tmp / name).exists(), name


# The routes are appended to --base-url: any of these would register URLs answered 404.
# Refused before the provider is looked at, so no provider is configured here.
BASE_URLS: dict[str, Case] = {
    "a_query": (
        ("webhooks", "register", "--base-url", "https://example.com/x?y=1"),
        {},
        "--base-url https://example.com/x?y=1 has a query (?…)",
    ),
    "an_empty_query": (
        ("webhooks", "register", "--base-url", "https://example.com/?"),
        {},
        "has a query (?…)",
    ),
    "a_fragment": (
        ("webhooks", "register", "--base-url", "https://example.com/#frag"),
        {},
        "has a fragment (#…)",
    ),
    "the_qrcode_route": (
        ("webhooks", "register", "--base-url", "https://example.com/webhooks/qrcode/"),
        {},
        "already names the receiver's routes: give the address they live under, "
        "https://example.com;",
    ),
    "an_accounts_route_under_a_prefix": (
        ("webhooks", "register", "--base-url", "https://example.com/pix/webhooks/accounts"),
        {},
        "give the address they live under, https://example.com/pix;",
    ),
    "webhooks_alone": (
        ("webhooks", "register", "--base-url", "https://example.com/webhooks"),
        {},
        "already names the receiver's routes",
    ),
    # Everything left out: nothing done is no success.
    "nothing_to_register": (
        (
            *("webhooks", "register", "--base-url", "https://example.com"),
            *("--no-automatico", "--no-accounts"),
        ),
        {},
        "nothing to register: give --chave YOUR-PIX-KEY",
    ),
}


@pytest.mark.parametrize("name", list(BASE_URLS))
def test_a_base_url_the_routes_cannot_be_appended_to_is_refused(name: str, tmp_path: Path) -> None:
    [(result, says)] = run_all({name: BASE_URLS[name]}, tmp_path).values()
    assert_one_line(result, says)


def test_version(tmp_path: Path) -> None:
    result = run_pixrecon("--version", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("pixrecon ")


def test_ids_that_do_not_exist(database_url: str, tmp_path: Path) -> None:
    """Once on SQLite, once on PostgreSQL: a migrated database without that id."""
    cases: dict[str, Case] = {
        "show": (("events", "show", "999999"), {}, "no inbox item 999999"),
        "replay": (("events", "replay", "999999"), {}, "no inbox item 999999"),
        "ignore": (("events", "ignore", "999999", "--reason", "x"), {}, "no inbox item 999999"),
        "ack": (("exceptions", "ack", "999999"), {}, "no exception case 999999"),
        "resolve": (("exceptions", "resolve", "999999", "--note", "x"), {}, "no exception case"),
    }
    url = {"database_url": database_url}
    outcomes = run_all({name: (a, url, says) for name, (a, _, says) in cases.items()}, tmp_path)
    for result, says in outcomes.values():
        assert_one_line(result, says)


@pytest.mark.postgres
def test_a_postgresql_database_that_does_not_exist(postgres_admin_url: str, tmp_path: Path) -> None:
    name = f"pixrecon_absent_{uuid.uuid4().hex[:8]}"
    url = make_url(postgres_admin_url).set(database=name).render_as_string(hide_password=False)
    cases: dict[str, Case] = {
        "events": (("events",), {"database_url": url}, f'database "{name}" does not exist'),
        "poll": (
            ("poll",),
            {
                "database_url": url,
                "qrcode_api_url": "http://127.0.0.1:1",
                "qrcode_client_id": "id",
                "qrcode_client_secret": "secret",
            },
            "create it, then run `pixrecon db upgrade`",
        ),
    }
    for result, says in run_all(cases, tmp_path).values():
        assert_one_line(result, says)


def test_an_unexpected_error_is_one_line_and_its_stack_only_at_debug(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    import logging

    import structlog
    from sqlalchemy.exc import OperationalError

    from pixrecon.cli import run
    from pixrecon.commands import events
    from reconcile.settings import get_settings

    failures: list[Exception] = [
        KeyError("a bug of ours"),
        OperationalError("SELECT 1", {}, Exception("server closed the connection")),
    ]

    def broken(*_args: object, **_kwargs: object) -> None:
        raise failures[0]

    monkeypatch.setattr(events, "database_or_exit", broken)
    saved, handlers = structlog.get_config(), logging.getLogger().handlers[:]
    said = []
    try:
        for level in ("INFO", "DEBUG", "INFO"):
            env = clean_env(log_json="0", log_level=level, database_url="sqlite://")
            for name, value in env.items():
                monkeypatch.setenv(name, value)
            get_settings.cache_clear()
            assert run(["events"]) == 2
            said.append(capfd.readouterr().err)
            if level == "DEBUG":
                failures.pop(0)
    finally:
        get_settings.cache_clear()
        structlog.configure(**saved)
        logging.getLogger().handlers[:] = handlers
    quiet, debug, unavailable = said
    assert quiet.strip().splitlines() == [
        "error: the command stopped on an unexpected error (KeyError: 'a bug of ours'); "
        "PIXRECON_LOG_LEVEL=DEBUG shows where it happened"
    ]
    assert "Traceback" in debug
    assert "KeyError: 'a bug of ours'" in debug
    assert unavailable.strip().splitlines() == [
        "error: cannot use the database at sqlite://: server closed the connection; check "
        "PIXRECON_DATABASE_URL and that the database server is running"
    ]


def test_a_time_without_an_offset_is_sao_paulo_time_on_every_command() -> None:
    from datetime import UTC, datetime

    from pixrecon.commands.common import moment_option

    # 14:30 in São Paulo (UTC-3, no daylight saving since 2019) is 17:30 UTC.
    assert moment_option("2026-11-22T14:30", "--since").astimezone(UTC) == datetime(
        2026, 11, 22, 17, 30, tzinfo=UTC
    )
    assert moment_option("2026-11-22T14:30Z", "--since") == datetime(
        2026, 11, 22, 14, 30, tzinfo=UTC
    )


def test_a_case_change_the_database_refuses_is_never_told_as_done(
    tmp_path: Path, sqlite_template: Path
) -> None:
    """Acknowledging or resolving says what changed only once it is committed: a database
    that refuses the write (here a read-only one) gets the error line alone, not a line
    saying the case changed followed by it."""
    import shutil
    from datetime import date

    from reconcile.db import create_db_engine, session_scope
    from reconcile.models import ExceptionCase

    path = tmp_path / "cases.db"
    shutil.copy(sqlite_template, path)
    engine = create_db_engine(f"sqlite:///{path}")
    with session_scope(engine) as session:
        case = ExceptionCase(
            business_date=date(2026, 3, 2),
            subject="charge",
            ref="cob:tx1",
            status="overpaid",
            first_seen_run_id=1,
            last_seen_run_id=1,
        )
        session.add(case)
        session.flush()
        case_id = str(case.id)
    engine.dispose()
    env = clean_env(database_url=f"sqlite:///file:{path}?mode=ro&uri=true", log_json="0")
    for args in (("ack", case_id), ("resolve", case_id, "--note", "paid back")):
        result = run_pixrecon("exceptions", *args, cwd=tmp_path, env=env)
        assert result.returncode == 2, result
        assert result.stdout == "", result.stdout
        assert "readonly database" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr, result.stderr


def test_a_read_only_database_is_named_so_not_a_server_that_is_down(
    tmp_path: Path, sqlite_template: Path
) -> None:
    """A database the command may not write to: one line saying so, not "check that the
    server is running", nor the driver's exception."""
    import shutil

    path = tmp_path / "ro.db"
    shutil.copy(sqlite_template, path)
    env = clean_env(database_url=f"sqlite:///file:{path}?mode=ro&uri=true", log_json="0")
    result = run_pixrecon("reconcile", "--date", "2026-03-02", cwd=tmp_path, env=env)
    assert result.returncode == 2, result
    (line,) = result.stderr.strip().splitlines()
    assert "is read-only (attempt to write a readonly database)" in line, line
    assert "server is running" not in line, line
    assert "OperationalError" not in line, line


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ("poll", "--since", "2026-01-01T00:00", "--until", "9999-12-31T23:59"),
            "--until '9999-12-31T23:59' is outside the times pixrecon handles "
            "(1900-01-01 to 9998-12-31)",
        ),
        (
            ("poll", "--since", "9999-12-31T23:00", "--until", "9999-12-31T23:59"),
            "--since '9999-12-31T23:00' is outside the times pixrecon handles",
        ),
        (
            ("events", "replay", "--since", "0001-01-01T00:00"),
            "--since '0001-01-01T00:00' is outside the times pixrecon handles",
        ),
    ],
)
def test_a_time_no_date_can_hold_is_refused(
    args: tuple[str, ...], says: str, tmp_path: Path
) -> None:
    """A time past what a date holds once in UTC ended the poll in an unexpected error,
    with the provider configured and the database ready."""
    url = f"sqlite:///{tmp_path / 'ready.db'}"
    engine = create_db_engine(url)
    upgrade(engine)
    engine.dispose()
    provider = {
        "qrcode_api_url": "http://127.0.0.1:1",
        "qrcode_client_id": "id",
        "qrcode_client_secret": "secret",
    }
    env = clean_env(log_json="0", database_url=url, **provider)
    assert_one_line(run_pixrecon(*args, cwd=tmp_path, env=env), says)


# Settings that would leave a defence or an identity configured in name only: every
# delivery refused, or every call to the provider made without its client certificate.
HALF_SET: dict[str, Case] = {
    "proxy_verify_header_no_proxy_can_send": (
        ("events",),
        {"mtls_verified_header": "X-SSL Client-Verify"},
        "PIXRECON_MTLS_VERIFIED_HEADER='X-SSL Client-Verify': an HTTP header name",
    ),
    "proxy_subject_header_no_proxy_can_send": (
        ("events",),
        {"mtls_subject_header": "X-SSL-Client-Subject:"},
        "PIXRECON_MTLS_SUBJECT_HEADER='X-SSL-Client-Subject:': an HTTP header name",
    ),
    "provider_key_without_its_certificate": (
        ("reconcile", "--date", "2026-01-01"),
        {
            "qrcode_api_url": "http://127.0.0.1:1",
            "qrcode_client_id": "id",
            "qrcode_client_secret": "secret",
            "qrcode_client_key": "{tmp}/client.key",
        },
        "PIXRECON_QRCODE_CLIENT_KEY is set, but PIXRECON_QRCODE_CLIENT_CERT is not",
    ),
}


def test_a_setting_that_would_work_in_name_only_is_one_line_and_exit_two(
    tmp_path: Path,
) -> None:
    (tmp_path / "client.key").write_text("")
    for name, (result, says) in run_all(HALF_SET, tmp_path).items():
        assert "Traceback" not in result.stderr, name
        assert_one_line(result, says)


def test_a_setting_that_is_no_secret_is_shown_whole_and_a_url_password_never(
    tmp_path: Path,
) -> None:
    """Only secrets are hidden: a number of days with eleven digits is not a CPF, in a JSON
    line (where personal data is masked) as on a terminal; a URL's password is."""
    cases: dict[str, Case] = {
        "days_like_a_document": (
            ("prune", "--dry-run"),
            {"retention_days": "99999999999"},
            "PIXRECON_RETENTION_DAYS='99999999999': at most 36500 days",
        ),
        "url_with_password": (
            ("events",),
            {"broker_url": "http://cache:hunter2@127.0.0.1:6379/0"},
            "PIXRECON_BROKER_URL='http://cache:***@127.0.0.1:6379/0': not a Redis URL",
        ),
    }
    for name, (result, says) in run_all(cases, tmp_path).items():
        assert_one_line(result, says)
        assert "hunter2" not in result.stderr, name
    for name, (args, variables, says) in cases.items():
        env = clean_env(log_json="1", **variables)
        result = run_pixrecon(*args, cwd=tmp_path, env=env)
        assert result.returncode == 2, result.stderr
        [line] = result.stderr.splitlines()
        assert json.loads(line)["message"].startswith(says), name
        assert "hunter2" not in line, name


def test_a_start_that_fails_says_only_why(
    tmp_path: Path, sqlite_template: Path, redis_url: str
) -> None:
    """No provider configured and no webhook authentication are warned about by a start
    that goes on: one that cannot start prints its error line alone."""
    migrated = tmp_path / "migrated.db"
    shutil.copyfile(sqlite_template, migrated)
    down = "postgresql://pixrecon@127.0.0.1:1/pixrecon"
    cases: dict[str, Case] = {
        "serve_port_busy": (
            ("serve", "--port", "{busy_port}"),
            {"insecure_no_auth": "1", "database_url": f"sqlite:///{migrated}"},
            "port {busy_port} is already in use on 127.0.0.1",
        ),
        "serve_database_down": (
            ("serve", "--port", str(free_port())),
            {"insecure_no_auth": "1", "database_url": down},
            "cannot use the database at postgresql://pixrecon@127.0.0.1:1/pixrecon",
        ),
        "worker_database_down": (
            ("worker",),
            {"broker_url": redis_url, "database_url": down},
            "cannot use the database at postgresql://pixrecon@127.0.0.1:1/pixrecon",
        ),
        "worker_metrics_port_busy": (
            ("worker",),
            {
                "broker_url": redis_url,
                "database_url": f"sqlite:///{migrated}",
                "worker_metrics_port": "{busy_port}",
            },
            "port {busy_port} is already in use on 127.0.0.1",
        ),
    }
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        outcomes = run_all(cases, tmp_path, busy.getsockname()[1])
    for name, (result, says) in outcomes.items():
        assert_one_line(result, says)
        assert len(result.stderr.splitlines()) == 1, (name, result.stderr)
