"""Nothing is lost when the broker fails: the inbox row is the truth, the sweeper re-sends."""

from __future__ import annotations

import time
from typing import Any

import dramatiq
import pytest
from dramatiq.middleware import MiddlewareError
from sqlalchemy import Engine, select

from pixrecon.node import Node
from reconcile.db import session_scope
from reconcile.models import InboxItem
from sandbox.server import BackgroundServer
from tests.conftest import RunningNode, make_settings
from tests.factories import pix


class BrokerDown(MiddlewareError):
    pass


class BrokerOutage(dramatiq.Middleware):
    """Makes every send fail, as a Redis outage would, until switched off."""

    def __init__(self) -> None:
        self.down = False

    def before_enqueue(self, broker: dramatiq.Broker, message: Any, delay: Any) -> None:
        if self.down:
            raise BrokerDown("broker is down")


def test_delivery_is_acked_while_broker_is_down_and_processed_once_it_is_back(
    engine: Engine,
) -> None:
    settings = make_settings(engine.url.render_as_string(hide_password=False))
    with Node(settings, engine) as node, BackgroundServer(node.app) as server:
        outage = BrokerOutage()
        node.runtime.broker.add_middleware(outage)
        outage.down = True
        running = RunningNode(node, server)
        response = running.post_pix({"pix": [pix()]})
        assert response.status_code == 200
        # Several sweeps happen during the outage; they must not lose or process the item.
        time.sleep(1.5)
        assert running.summary()["pending"] == 1
        outage.down = False
        summary = running.wait_processed(timeout=10)
        assert summary["pix_received"] == 1
        with session_scope(engine) as session:
            item = session.execute(select(InboxItem)).scalar_one()
        assert item.attempts == 1
        assert item.dispatched_at is not None  # it went through the sweeper
        running.http.close()


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+psycopg://postgres@127.0.0.1:1/nowhere",
        "sqlite:////nonexistent-directory/for/pixrecon.db",
    ],
)
def test_unreachable_database_answers_503_never_2xx(url: str) -> None:
    from reconcile.db import create_db_engine

    engine = create_db_engine(url)
    settings = make_settings(url)
    with Node(settings, engine) as node, BackgroundServer(node.app) as server:
        running = RunningNode(node, server)
        response = running.post_pix({"pix": [pix()]})
        assert response.status_code == 503
        assert response.headers["content-type"] == "application/problem+json"
        assert int(response.headers["retry-after"]) > 0
        assert running.http.get("/healthz").status_code == 503
        running.http.close()
