"""Playing the demo's day: the sandbox serves both provider APIs and plays the scenario
against a receiver with in-process workers; the day is then fetched and reconciled exactly
as ``pixrecon reconcile`` does it."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import httpx
from rich.progress import Progress
from sqlalchemy import Engine
from sqlalchemy.engine import make_url

from pixrecon.bootstrap import StartupError, open_database, shown_url
from pixrecon.node import Node
from pixrecon.sandbox_wiring import sandbox_servers
from reconcile.db import DatabaseUrlError, parse_database_url, session_scope
from reconcile.matching.context import Judging
from reconcile.nightly import STEPS, NightlyResult, reconcile_day
from reconcile.polling.day import fetch_day, sources_of
from reconcile.processing import process_items
from reconcile.queries import inbox_summary
from reconcile.settings import Settings
from sandbox.scenario import Scenario, ScenarioOutcome, run_scenario, scenario_provider
from sandbox.server import BackgroundServer

# A delivery delayed by the scenario waits at most this long: the demo shows the order
# changing, not the clock.
MAX_DELAY_SECONDS = 1.0
# The demo's provider fails on purpose: the retries are the point, not their warnings.
DEMO_LOG_LEVEL = "ERROR"
# The in-process workers take what the receiver stored in well under this.
DRAIN_TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class Login:
    """The dashboard's one user for ``--serve``: made up for this run, shown once."""

    name: str
    password: str
    hashed: str


@dataclass
class PlayedDay:
    scenario: Scenario
    outcome: ScenarioOutcome
    result: NightlyResult
    engine: Engine
    settings: Settings
    receiver_url: str


class DemoError(Exception):
    """The demo cannot run as asked: one line (or a scenario's list of problems) for the
    person, exit code 2."""


def reset_sqlite(database_url: str) -> None:
    """The demo's SQLite file starts empty on each run; any other database must be empty
    already (``check_empty``)."""
    url = make_url(database_url)
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return
    for suffix in ("", "-wal", "-shm"):
        Path(url.database + suffix).unlink(missing_ok=True)


def demo_settings(database_url: str, secret: str, login: Login | None) -> Settings:
    """The receiver's and workers' settings for the demo, apart from where the sandbox is."""
    dashboard: dict[str, Any] = {}
    if login is not None:
        dashboard = {
            "dashboard_users": [f"{login.name}:{login.hashed}"],
            "dashboard_secret": secrets.token_urlsafe(48),
            # The demo serves plain HTTP on the address it prints.
            "dashboard_cookie_secure": False,
        }
    return Settings(
        _env_file=None,
        database_url=database_url,
        webhook_secrets=[secret],
        log_level=DEMO_LOG_LEVEL,
        # The demo runs each job itself, in order, instead of on timers; and its sandbox
        # never lags, so a movement it does not know after a moment is forged.
        scheduler_enabled=False,
        confirm_grace_seconds=0.001,
        sweep_interval_seconds=1.0,
        redispatch_after_seconds=5.0,
        # The sandbox's bad afternoon ends the moment it is asked again: waits stay short.
        provider_max_backoff_seconds=1.0,
        provider_retry_seconds=60.0,
        **dashboard,
    )


@contextmanager
def _counting_client(progress: Progress) -> Iterator[httpx.Client]:
    """The sandbox's HTTP client, each webhook request it sends shown as it is answered."""
    task = progress.add_task("sandbox plays the day", total=None)

    def sent(response: httpx.Response) -> None:
        progress.advance(task)

    with httpx.Client(timeout=10.0, event_hooks={"response": [sent]}) as client:
        yield client
    done = next(t.completed for t in progress.tasks if t.id == task)
    progress.update(task, description="sandbox played the day", total=done)


def _drain(engine: Engine, progress: Progress) -> None:
    """Wait for the workers to take every stored item, showing how far they are."""
    task = progress.add_task("workers processing", total=None)
    deadline = time.monotonic() + DRAIN_TIMEOUT_SECONDS
    while True:
        with session_scope(engine) as session:
            summary = inbox_summary(session)
        done = summary["processed"] + summary["failed"] + summary["unsupported"]
        progress.update(task, completed=done, total=summary["items"])
        if summary["pending"] == 0 or time.monotonic() > deadline:
            return
        time.sleep(0.05)


def check_empty(engine: Engine) -> None:
    """The self-check counts what the database holds: a day played twice (same seed, same
    keys) would count every notification twice."""
    with session_scope(engine) as session:
        items = inbox_summary(session)["items"]
    if items:
        raise DemoError(
            f"the demo needs an empty database, and this one already holds {items} inbox "
            "items: point --database-url at an empty one (a SQLite file is recreated)"
        )


def open_demo_database(database_url: str) -> Engine:
    """The demo's database, ready to play a day on: a SQLite file recreated, any other
    migrated and empty. ``StartupError`` or ``DemoError`` when it cannot be, before
    anything of the day is played or printed."""
    try:
        # Before ``reset_sqlite`` reads it: a URL that is none says so, not a traceback.
        parse_database_url(database_url)
    except DatabaseUrlError as exc:
        raise StartupError(f"PIXRECON_DATABASE_URL={shown_url(database_url)!r}: {exc}") from None
    reset_sqlite(database_url)
    # Only where the database is counts here; the day's own settings come with the sandbox.
    engine = open_database(Settings.model_construct(database_url=database_url), auto_upgrade=True)
    try:
        check_empty(engine)
    except BaseException:
        engine.dispose()
        raise
    return engine


def _judge(node: Node, day: date, progress: Progress) -> NightlyResult:
    settings, engine, providers = node.settings, node.engine, node.runtime.jobs.providers
    task = progress.add_task("fetching the day", total=None)

    def fetching(name: str) -> None:
        progress.update(task, description=f"fetching {name}")

    fetched = fetch_day(
        engine,
        providers,
        day,
        settings,
        on_new=lambda ids: process_items(engine, ids),
        on_step=fetching,
    )
    progress.update(task, description="fetched the day", total=1, completed=1)
    matching = progress.add_task("matching", total=len(STEPS))
    return reconcile_day(
        engine,
        day,
        on_step=lambda name: progress.update(matching, description=f"matching {name}", advance=1),
        judging=Judging.from_settings(settings),
        sources=sources_of(providers, settings, fetched),
    )


@contextmanager
def played_day(
    scenario: Scenario,
    day: date,
    *,
    database_url: str,
    progress: Progress,
    listen: tuple[str, int] = ("127.0.0.1", 0),
    login: Login | None = None,
    on_listening: Callable[[str], None] | None = None,
    engine: Engine | None = None,
) -> Iterator[PlayedDay]:
    """Play ``scenario`` on ``day`` and reconcile it; the receiver (on ``listen``), its
    workers and the sandbox keep running until the block ends. ``engine``: the database
    at ``database_url`` already opened by ``open_demo_database``."""
    provider = scenario_provider(scenario)
    secret = secrets.token_urlsafe(24)
    if engine is None:
        engine = open_demo_database(database_url)
    with sandbox_servers(provider) as urls:
        settings = urls.configure(demo_settings(database_url, secret, login))
        host, port = listen
        with (
            Node(settings, engine) as node,
            BackgroundServer(node.app, host=host, port=port) as server,
        ):
            if on_listening is not None:
                on_listening(server.url)
            with _counting_client(progress) as client:
                outcome = run_scenario(
                    scenario,
                    provider,
                    qrcode_webhook_url=server.url + "/webhooks/qrcode",
                    accounts_webhook_url=server.url + "/webhooks/accounts",
                    secret_header=settings.webhook_secret_header,
                    secret=secret,
                    client=client,
                    day=day,
                    sleep=lambda seconds: time.sleep(min(seconds, MAX_DELAY_SECONDS)),
                )
            _drain(engine, progress)
            result = _judge(node, day, progress)
            yield PlayedDay(scenario, outcome, result, engine, settings, server.url)
