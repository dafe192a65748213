from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine

from pixrecon.node import Node
from sandbox.server import BackgroundServer
from tests.conftest import RunningNode, make_settings
from tests.dashboard.support import dashboard_settings


@pytest.fixture
def dashboard_node(engine: Engine) -> Iterator[RunningNode]:
    """A node with the dashboard switched on, serving real HTTP on loopback."""
    settings = make_settings(
        engine.url.render_as_string(hide_password=False), **dashboard_settings()
    )
    with Node(settings, engine) as node, BackgroundServer(node.app) as server:
        running = RunningNode(node, server)
        yield running
        running.http.close()
