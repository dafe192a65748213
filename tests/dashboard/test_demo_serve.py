"""``pixrecon demo --serve`` as a new user meets it: the day plays, the command prints the
dashboard's address and a login, a real browser (Debian's Chromium through Playwright)
signs in and sees the verdict and the bridge the terminal showed, and Ctrl-C stops it all.
Screenshots go to ``test-artifacts/dashboard/demo/``."""

from __future__ import annotations

import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from tests.cli_support import clean_env, table_row
from tests.dashboard.support import figure

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "dashboard" / "demo"


def _lines_until(
    process: subprocess.Popen[str], lines: queue.Queue[str | None], marker: str, timeout: float
) -> str:
    """What the process printed up to the line holding ``marker``."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            continue
        if line is None:
            break
        seen.append(line)
        if marker in line:
            return "".join(seen)
    process.kill()
    raise AssertionError(f"no {marker!r} within {timeout} s:\n" + "".join(seen)[-3000:])


def test_the_demo_serves_its_day_to_a_browser_and_stops_on_ctrl_c(
    browser_page: Any, tmp_path: Path
) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "pixrecon", "demo", "--serve", "--port", "0"],
        cwd=tmp_path,
        env={**clean_env(), "COLUMNS": "100"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    try:
        printed = _lines_until(process, lines, "Ctrl-C stops", timeout=90)
        found = re.search(r"dashboard +(http://127\.0\.0\.1:\d+)/dashboard/\?date=(\S+)", printed)
        user = re.search(r"^user +(\S+)$", printed, re.MULTILINE)
        password = re.search(r"^password +(\S+)$", printed, re.MULTILINE)
        assert found, printed[-2000:]
        assert user
        assert password
        url, day = found.groups()
        assert day == "2026-03-02"
        closing = table_row(printed, "closing balance")[3]
        opening = table_row(printed, "opening balance")[3]
        assert "breaks: exceptions remain" in printed

        page = browser_page
        page.goto(f"{url}/dashboard/?date={day}")
        assert "/dashboard/login" in page.url
        page.fill("input[name=name]", user.group(1))
        page.fill("input[name=password]", password.group(1))
        page.click("button:has-text('Sign in')")
        page.wait_for_selector('[data-figure="date"]')
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "day.png"), full_page=True)
        assert figure(page, "date") == "02/03/2026"
        assert "breaks" in page.inner_text(".summary").lower()
        assert figure(page, "bridge.opening") == opening
        assert figure(page, "bridge.closing") == closing
        assert figure(page, "open_exceptions") == "4"

        # Without the login, the day stays behind the sign-in page.
        assert httpx.get(f"{url}/dashboard/", follow_redirects=False).status_code == 303

        process.send_signal(signal.SIGINT)
        rest = _lines_until(process, lines, "stopped", timeout=20)
        assert process.wait(timeout=20) == 0
        assert "receiver, its workers and the sandbox are down" in rest
        assert process.stderr is not None
        assert "Traceback" not in process.stderr.read()
        with_the_door_shut = httpx.Client(timeout=2)
        try:
            with_the_door_shut.get(f"{url}/healthz")
            raise AssertionError("the receiver still answers after Ctrl-C")
        except httpx.TransportError:
            pass
        finally:
            with_the_door_shut.close()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
