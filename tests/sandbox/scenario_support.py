"""For the scenario tests: a receiver that records and acknowledges every POST, and a
one-call way to play a scenario against it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from sandbox.scenario import (
    Scenario,
    ScenarioOutcome,
    identities_of,
    parse_scenario,
    run_scenario,
    scenario_provider,
)
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "business-day.json"
SECRET_HEADER = "X-Webhook-Secret"
SECRET = "scenario-secret"


@dataclass(frozen=True)
class Post:
    path: str
    headers: dict[str, str]
    body: Any

    @property
    def identities(self) -> list[str]:
        return identities_of(self.path, self.body)


class Recorder:
    """Records every POST in arrival order and answers 200."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.posts: list[Post] = []
        self.app = Starlette(routes=[Route("/{path:path}", self._handle, methods=["POST"])])

    async def _handle(self, request: Request) -> Response:
        body = json.loads(await request.body(), parse_float=Decimal)
        with self._lock:
            self.posts.append(Post(request.url.path, dict(request.headers), body))
        return Response(status_code=200)

    def identities(self) -> list[str]:
        """Every notification item received, in arrival order."""
        with self._lock:
            return [identity for post in self.posts for identity in post.identities]

    def reset(self) -> None:
        with self._lock:
            self.posts.clear()


@pytest.fixture(scope="module")
def recorder_server() -> Iterator[tuple[Recorder, BackgroundServer]]:
    recorder = Recorder()
    with BackgroundServer(recorder.app) as server:
        yield recorder, server


@pytest.fixture
def recorder(recorder_server: tuple[Recorder, BackgroundServer]) -> Recorder:
    recorder_server[0].reset()
    return recorder_server[0]


def play(
    scenario: Scenario, server: BackgroundServer, **options: Any
) -> tuple[ScenarioOutcome, SandboxProvider]:
    provider = scenario_provider(scenario)
    outcome = run_scenario(
        scenario,
        provider,
        qrcode_webhook_url=server.url + "/webhooks/qrcode",
        accounts_webhook_url=server.url + "/webhooks/accounts",
        secret_header=SECRET_HEADER,
        secret=SECRET,
        **options,
    )
    return outcome, provider


def day(*events: dict[str, Any], **top: Any) -> Scenario:
    """A small scenario: ``events`` plus top-level keys (date and seed fixed)."""
    return parse_scenario(
        {"name": "test-day", "date": "2026-03-02", "seed": 7, **top, "events": list(events)}
    )


def pix(ref: str, at: str, amount: str = "10.00", **fields: Any) -> dict[str, Any]:
    return {"type": "pix", "ref": ref, "at": at, "amount": amount, "txid": ref, **fields}


def bearer(base_url: str, path: str, data: dict[str, str], auth: tuple[str, str]) -> str:
    """A token from ``POST {path}`` (both API families accept form credentials)."""
    response = httpx.post(base_url + path, data=data, auth=auth)
    response.raise_for_status()
    body = response.json()
    return str(body.get("access_token") or body.get("accessToken"))
