"""One log format: with ``PIXRECON_LOG_JSON=1`` every line on stderr is JSON — ours, the
libraries' (uvicorn, alembic, APScheduler, Dramatiq, httpx) and a command's own diagnostics —
at levels that keep routine chatter out, and a command's output on stdout stays clean."""

from __future__ import annotations

import io
import json
import logging
import shutil
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
import structlog

from reconcile.logs import configure_logging, get_logger
from tests.cli_support import clean_env, run_pixrecon
from tests.conftest import SECRET, free_port, wait_for
from tests.factories import pix


def json_lines(stderr: str) -> list[dict[str, Any]]:
    """Every line parsed; a line that is not JSON fails the test with the line shown."""
    lines = []
    for line in stderr.splitlines():
        try:
            lines.append(json.loads(line))
        except json.JSONDecodeError:
            pytest.fail(f"not a JSON log line: {line!r}")
    return lines


def loggers(lines: list[dict[str, Any]]) -> set[str]:
    return {str(line.get("logger")) for line in lines}


@pytest.fixture
def restored_logging() -> Iterator[None]:
    root = logging.getLogger()
    saved = (structlog.get_config(), root.handlers[:], root.level, threading.excepthook)
    levels = {name: logging.getLogger(name).level for name in ("httpx", "apscheduler")}
    yield
    structlog.configure(**saved[0])
    root.handlers[:], root.level, threading.excepthook = saved[1], saved[2], saved[3]
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)
    logging.captureWarnings(False)


@pytest.mark.usefixtures("restored_logging")
def test_libraries_share_our_format_at_sensible_levels() -> None:
    # As uvicorn's default configuration leaves it (a sandbox server started earlier).
    logging.getLogger("uvicorn.error").addHandler(logging.StreamHandler(io.StringIO()))
    logging.getLogger("uvicorn").propagate = False
    stream = io.StringIO()
    configure_logging("INFO", json=True, stream=stream)
    get_logger("receiver.ingest").info("webhook_accepted", items=1)
    logging.getLogger("uvicorn.error").info("Started server process [1]")
    logging.getLogger("httpx").info('HTTP Request: GET https://provider/pix "HTTP/1.1 200 OK"')
    logging.getLogger("apscheduler.executors.default").info('Running job "poll_qrcode"')
    logging.getLogger("apscheduler.scheduler").warning("Run time of job was missed")
    # A tick while the job still runs is merged into the next by design: not news.
    logging.getLogger("apscheduler.scheduler").warning(
        'Execution of job "%s" skipped: maximum number of running instances reached (%d)',
        "poll_qrcode",
        1,
    )
    logging.getLogger("dramatiq.worker").info("Worker process is ready for action.")
    logging.getLogger("httpx").warning("CPF 123.456.789-09 in a URL")
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        logging.captureWarnings(False)  # whatever an earlier test left: capture afresh
        logging.captureWarnings(True)
        warnings.warn("a library is deprecated", DeprecationWarning, stacklevel=1)
    lines = json_lines(stream.getvalue())
    assert [(line["logger"], line["level"]) for line in lines] == [
        ("receiver.ingest", "info"),
        ("uvicorn.error", "info"),
        ("apscheduler.scheduler", "warning"),
        ("dramatiq.worker", "info"),
        ("httpx", "warning"),
        ("py.warnings", "warning"),
    ]
    assert "123.456.789-09" not in stream.getvalue()  # library text is masked too


@pytest.mark.usefixtures("restored_logging")
def test_at_debug_the_libraries_say_everything() -> None:
    stream = io.StringIO()
    configure_logging("DEBUG", json=True, stream=stream)
    logging.getLogger("httpx").info("HTTP Request: GET https://provider/pix")
    assert json_lines(stream.getvalue())[0]["logger"] == "httpx"


def test_db_upgrade_and_poll_log_json_and_print_clean_output(tmp_path: Path) -> None:
    from sandbox.app import create_app
    from sandbox.defaults import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET
    from sandbox.server import BackgroundServer
    from sandbox.state import SandboxProvider

    provider = SandboxProvider(seed=3)
    provider.receive_pix(Decimal("7.00"))
    with BackgroundServer(create_app(provider)) as sandbox:
        env = clean_env(
            log_json="1",
            database_url=f"sqlite:///{tmp_path / 'logs.db'}",
            qrcode_api_url=sandbox.url,
            qrcode_client_id=DEFAULT_CLIENT_ID,
            qrcode_client_secret=DEFAULT_CLIENT_SECRET,
        )
        upgraded = run_pixrecon("db", "upgrade", cwd=tmp_path, env=env)
        polled = run_pixrecon("poll", "--format", "json", cwd=tmp_path, env=env)
        failed = run_pixrecon("events", "show", "999", cwd=tmp_path, env=env)
    assert upgraded.returncode == 0, upgraded.stderr
    assert upgraded.stdout.startswith("database at revision")
    assert json_lines(upgraded.stderr) == []  # alembic's steps are not news at INFO
    assert polled.returncode == 0, polled.stderr
    assert json.loads(polled.stdout)["new"] == 1  # stdout is the output, nothing else
    assert "httpx" not in loggers(json_lines(polled.stderr))
    (error,) = json_lines(failed.stderr)
    assert (error["level"], error["message"]) == ("error", "no inbox item 999")
    assert failed.returncode == 2


def test_serve_logs_every_line_as_json(tmp_path: Path) -> None:
    port = free_port()
    env = clean_env(
        log_json="1",
        webhook_secrets=SECRET,
        database_url=f"sqlite:///{tmp_path / 'serve.db'}",
        # The periodic jobs tick often here: their scheduler must stay quiet at INFO.
        reconcile_interval_seconds="0.5",
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "pixrecon", "serve", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            return httpx.get(url + "/healthz", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_for(up, timeout=30, interval=0.2)
        headers = {"X-Webhook-Secret": SECRET}
        response = httpx.post(url + "/webhooks/qrcode/pix", json={"pix": [pix()]}, headers=headers)
        assert response.status_code == 200
        # Accepted deliveries log at DEBUG only; a refused one is a line at INFO.
        refused = httpx.post(url + "/webhooks/qrcode/pix", json={"pix": [pix()]})
        assert refused.status_code == 401
        time.sleep(1.5)  # a few ticks of the scheduler
    finally:
        process.terminate()
        stdout, stderr = process.communicate(timeout=20)
    lines = json_lines(stderr)
    assert stdout == ""
    assert {"uvicorn.error", "receiver.ingest", "pixrecon"} <= loggers(lines)
    assert [line["event"] for line in lines if line["logger"] == "receiver.ingest"] == [
        "webhook_refused"
    ]
    assert any(line["event"] == "receiver_listening" for line in lines)
    assert not [line for line in lines if line["logger"].startswith("apscheduler")]


@pytest.mark.redis
def test_worker_processes_log_json_too(
    redis_url: str, sqlite_template: Path, tmp_path: Path
) -> None:
    database = tmp_path / "worker.db"
    shutil.copy(sqlite_template, database)
    log_file = tmp_path / "worker.log"
    env = clean_env(log_json="1", broker_url=redis_url, database_url=f"sqlite:///{database}")
    with log_file.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "pixrecon", "worker", "--processes", "1", "--threads", "1"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
        try:
            wait_for(lambda: "ready for action" in log_file.read_text(), timeout=30, interval=0.2)
        finally:
            process.terminate()
            process.wait(timeout=30)
    lines = json_lines(log_file.read_text())
    names = loggers(lines)
    assert any(name.startswith("dramatiq") for name in names), names
    assert not [line for line in lines if line["logger"].startswith("apscheduler")]


def test_the_sandbox_logs_json_and_prints_what_it_is_on_stdout(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "pixrecon", "sandbox", "--port", "0", "--accounts-port", "0"],
        cwd=tmp_path,
        env=clean_env(log_json="1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(3)
    finally:
        process.terminate()
        stdout, stderr = process.communicate(timeout=10)
    # uvicorn's lines too: every stderr line parses; the description is the output.
    assert "uvicorn.error" in loggers(json_lines(stderr))
    assert "sandbox Pix provider on http://127.0.0.1:" in stdout
