"""Playing a scenario file against a running node: the sandbox serves both APIs, the day is
played (yesterday, so polling sees all of it) against the node's receiver, and the test
then drives the periodic jobs and the nightly run itself."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path

from sqlalchemy import Engine

from pixrecon.node import Node
from pixrecon.sandbox_wiring import sandbox_servers
from reconcile.matching.context import Judging
from reconcile.nightly import NightlyResult, reconcile_day
from reconcile.polling.day import sources_of
from reconcile.settings import Settings
from reconcile.timeutil import BUSINESS_TZ, utcnow
from sandbox.scenario import ScenarioOutcome, load_scenario, run_scenario, scenario_provider
from sandbox.server import BackgroundServer
from tests.conftest import SECRET, RunningNode, make_settings

EXAMPLES = Path(__file__).parents[2] / "examples" / "scenarios"


@dataclass
class PlayedDay:
    node: RunningNode
    outcome: ScenarioOutcome
    settings: Settings
    day: date

    def reconcile(self, now: datetime | None = None, day: date | None = None) -> NightlyResult:
        """The nightly run of the played day (or ``day``), with the node's judging rules
        and sources."""
        return reconcile_day(
            self.node.node.engine,
            day or self.day,
            now=now,
            judging=Judging.from_settings(self.settings),
            sources=sources_of(self.node.node.runtime.jobs.providers, self.settings),
        )

    @staticmethod
    def node_now() -> datetime:
        return utcnow()


@contextmanager
def played(
    engine: Engine, scenario_file: str, *, configured: bool = True, **overrides: object
) -> Iterator[PlayedDay]:
    """The scenario played against a node; ``configured=False`` gives the node no provider
    API (the sandbox still serves the day, pixrecon just does not know where)."""
    scenario = load_scenario(EXAMPLES / scenario_file)
    provider = scenario_provider(scenario)
    yesterday = utcnow().astimezone(BUSINESS_TZ).date() - timedelta(days=1)
    with sandbox_servers(provider) as urls:
        settings = make_settings(
            engine.url.render_as_string(hide_password=False),
            **(urls.fields() if configured else {}),
            confirm_grace_seconds=0.001,
            poll_initial_lookback_seconds=3 * 86400,
            **overrides,
        )
        with Node(settings, engine) as running, BackgroundServer(running.app) as server:
            outcome = run_scenario(
                scenario,
                provider,
                qrcode_webhook_url=server.url + "/webhooks/qrcode",
                accounts_webhook_url=server.url + "/webhooks/accounts",
                secret_header="X-Webhook-Secret",
                secret=SECRET,
                day=yesterday,
                sleep=lambda _seconds: None,
            )
            yield PlayedDay(RunningNode(running, server), outcome, settings, yesterday)
