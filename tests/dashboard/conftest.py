from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine

from pixrecon.node import Node
from sandbox.server import BackgroundServer
from tests.conftest import RunningNode, make_settings, service_missing
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


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None and os.access("/usr/bin/chromium", os.X_OK):
        found = "/usr/bin/chromium"
    if found is None:
        service_missing("Chromium", "no chromium executable (apt-get install chromium)")
    assert found is not None
    return found


@pytest.fixture
def browser_page() -> Iterator[Any]:
    executable = _chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        service_missing("Playwright", str(exc))
    with sync_playwright() as playwright:
        # --no-sandbox: CI runs as root, where Chromium's own sandbox cannot start.
        browser = playwright.chromium.launch(
            executable_path=executable, headless=True, args=["--no-sandbox"]
        )
        context = browser.new_context(
            accept_downloads=True, viewport={"width": 1280, "height": 900}
        )
        context.set_default_timeout(10_000)
        try:
            yield context.new_page()
        finally:
            context.close()
            browser.close()
