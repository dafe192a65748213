"""Ctrl-C: exit code 130 and one line on stderr saying what was not finished (README,
"Exit codes and errors"); a reconciliation cut short keeps no verdict and no run left
``running``."""

from __future__ import annotations

import json
import logging
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import structlog
from sqlalchemy import func, select

from pixrecon.cli import run
from reconcile.db import create_db_engine, session_scope, table_of
from reconcile.models import InboxItem, ReconciliationItem, ReconciliationRun, ScheduledJob
from reconcile.nightly import reconcile_day
from reconcile.settings import get_settings
from reconcile.timeutil import as_utc, business_day_bounds, utcnow
from tests.cli_support import clean_env
from tests.conftest import free_port
from tests.factories import pix as pix_body
from tests.reconcile.day_book import DayBook

DAY = date(2026, 3, 10)
AFTER = business_day_bounds(DAY)[1] + timedelta(hours=2)
# Nothing listens there: the provider is retried, long enough to be interrupted.
UNREACHABLE = {
    "qrcode_api_url": "http://127.0.0.1:1",
    "qrcode_client_id": "id",
    "qrcode_client_secret": "secret",
    "provider_retry_seconds": "60",
    "log_json": "0",
}


@pytest.fixture
def database(tmp_path: Path, sqlite_template: Path) -> str:
    """A day with a Pix and a statement line, reconciled once."""
    path = tmp_path / "interrupt.db"
    shutil.copy(sqlite_template, path)
    url = f"sqlite:///{path}"
    engine = create_db_engine(url)
    book = DayBook(engine, DAY)
    e2e = book.pix(15_000, "10:00")
    book.confirm_all_pix()
    book.line("PIX_RECEIVED", 15_000, "10:00", credit=True, endToEndId=e2e)
    reconcile_day(engine, DAY, now=AFTER)
    engine.dispose()
    return url


def _runs(url: str) -> list[tuple[int, str, int]]:
    """(id, status, verdicts kept) of every run."""
    runs, items = table_of(ReconciliationRun), table_of(ReconciliationItem)
    engine = create_db_engine(url)
    try:
        with session_scope(engine) as session:
            counted = select(items.c.run_id, func.count()).group_by(items.c.run_id)
            kept = {int(run_id): int(n) for run_id, n in session.execute(counted).all()}
            rows = session.execute(select(runs.c.id, runs.c.status).order_by(runs.c.id)).all()
            return [(int(i), str(s), kept.get(int(i), 0)) for i, s in rows]
    finally:
        engine.dispose()


def _interrupt_when(
    args: list[str],
    env: dict[str, str],
    cwd: Path,
    sign: str,
    signum: signal.Signals = signal.SIGINT,
) -> tuple[int, str]:
    """Start ``pixrecon ARGS``, send ``signum`` once stderr shows ``sign``: (exit code,
    stderr)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "pixrecon", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    lines: queue.Queue[str] = queue.Queue()
    stream = process.stderr

    def read() -> None:
        for line in stream:
            lines.put(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    said: list[str] = []
    try:
        while not any(sign in line for line in said):
            said.append(lines.get(timeout=60))
        process.send_signal(signum)
        code = process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    reader.join(timeout=10)
    while not lines.empty():
        said.append(lines.get())
    return code, "".join(said)


def _the_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    (line,) = [line for line in stderr.splitlines() if line.startswith("interrupted:")]
    assert not [line for line in stderr.splitlines() if line.startswith("error:")], stderr
    return line


def test_ctrl_c_while_fetching_says_nothing_was_concluded(database: str, tmp_path: Path) -> None:
    before = _runs(database)
    code, stderr = _interrupt_when(
        ["reconcile", "--date", DAY.isoformat()],
        clean_env(database_url=database, **UNREACHABLE),
        tmp_path,
        "provider call failed",
    )
    assert code == 130, stderr
    line = _the_line(stderr)
    assert "the reconciliation of 10/03/2026 stopped while fetching" in line
    assert "nothing was concluded" in line
    assert f"run `pixrecon reconcile --date {DAY.isoformat()}` again" in line
    assert _runs(database) == before


def test_sigterm_ends_a_reconcile_as_ctrl_c_does(database: str, tmp_path: Path) -> None:
    # What systemd sends on stop or timeout: by default it killed the process without a
    # word, and a run caught while matching stayed ``running``.
    before = _runs(database)
    code, stderr = _interrupt_when(
        ["reconcile", "--date", DAY.isoformat()],
        clean_env(database_url=database, **UNREACHABLE),
        tmp_path,
        "provider call failed",
        signal.SIGTERM,
    )
    assert code == 130, stderr
    line = _the_line(stderr)
    assert "the reconciliation of 10/03/2026 stopped while fetching" in line
    assert _runs(database) == before


def test_ctrl_c_in_any_command_is_one_line_and_130(database: str, tmp_path: Path) -> None:
    code, stderr = _interrupt_when(
        ["poll"],
        clean_env(database_url=database, **UNREACHABLE),
        tmp_path,
        "provider call failed",
    )
    assert code == 130, stderr
    line = _the_line(stderr)
    # What was left, and that the workers' own polls are not held up by it.
    assert "the poll stopped before it finished (Ctrl-C or SIGTERM)" in line
    assert "the next poll resumes it" in line
    assert "its lease is given back" in line
    engine = create_db_engine(database)
    try:
        with session_scope(engine) as session:
            job = session.get(ScheduledJob, "poll_qrcode")
            leased_until = job.leased_until if job is not None else None
    finally:
        engine.dispose()
    assert leased_until is None or as_utc(leased_until) <= utcnow()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_receiver_stopped_by_a_signal_ends_normally(
    database: str, tmp_path: Path, signum: signal.Signals
) -> None:
    """Ctrl-C and SIGTERM are how a receiver is stopped: after its graceful shutdown it
    exits 0, as the worker and the sandbox do, not as an interrupted command."""
    code, stderr = _interrupt_when(
        ["serve", "--port", str(free_port())],
        clean_env(database_url=database, webhook_secrets="s3cret", log_json="0"),
        tmp_path,
        "Application startup complete",
        signum,
    )
    assert code == 0, stderr
    assert "Application shutdown complete" in stderr
    assert "interrupted:" not in stderr


@pytest.fixture
def pixrecon(
    database: str, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> Iterator[Callable[..., tuple[int, str]]]:
    """The console script's entry point in this process: (exit code, stderr)."""
    for name, value in clean_env(database_url=database, log_json="0").items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    saved, handlers = structlog.get_config(), logging.getLogger().handlers[:]
    capfd.readouterr()

    def invoke(*args: str) -> tuple[int, str]:
        code = run(list(args))
        return code, capfd.readouterr().err

    try:
        yield invoke
    finally:
        get_settings.cache_clear()
        structlog.configure(**saved)
        logging.getLogger().handlers[:] = handlers


def test_ctrl_c_while_matching_fails_the_run_and_keeps_no_verdict(
    pixrecon: Callable[..., tuple[int, str]], database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (first,) = _runs(database)
    # The day's answer, with its verdicts.
    assert first[1] == "completed"
    assert first[2] > 0

    def cut_short(*args: Any, on_step: Callable[[str], object], **kwargs: Any) -> Any:
        # Ctrl-C at the second matching step: the run is started, verdicts are written.
        steps: list[str] = []

        def step(name: str) -> None:
            steps.append(name)
            if len(steps) == 2:
                raise KeyboardInterrupt
            on_step(name)

        return reconcile_day(*args, on_step=step, now=AFTER, **kwargs)

    monkeypatch.setattr("pixrecon.commands.reconcile.reconcile_day", cut_short)
    code, stderr = pixrecon("reconcile", "--date", DAY.isoformat(), "--no-poll")
    assert code == 130, stderr
    line = " ".join(_the_line(stderr).split())
    (_, (_, status, kept)) = _runs(database)
    assert (status, kept) == ("failed", 0)
    assert "its run is marked failed and keeps no verdict" in line
    assert "nothing was concluded" in line
    assert _runs(database)[0] == first  # the day's answer is still the run before


def test_ctrl_c_while_the_report_prints_says_the_verdict_was_kept(
    pixrecon: Callable[..., tuple[int, str]], database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def cut_short(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("pixrecon.commands.reconcile.print_report", cut_short)
    code, stderr = pixrecon("reconcile", "--date", DAY.isoformat(), "--no-poll")
    assert code == 130, stderr
    line = " ".join(_the_line(stderr).split())
    (_, (run_id, status, kept)) = _runs(database)
    assert (status, kept > 0) == ("completed", True)
    assert f"the day was reconciled (run {run_id}," in line
    assert f"pixrecon exceptions --date {DAY.isoformat()}" in line


# The console script's entry, with a Ctrl-C arriving while it imports the commands (which
# takes over a second): raised at that import, not timed with a signal, so that a loaded
# machine cannot send it before the interpreter handles SIGINT, or after the import. Or
# SIGTERM, as systemd or ``timeout`` sends it, delivered to the process at that import.
_INTERRUPTED_IMPORT = """
import builtins
import os
import signal
import pixrecon.entry

real = builtins.__import__

def importing(name, *args, **kwargs):
    if name == "pixrecon.cli":
        {how}
    return real(name, *args, **kwargs)

builtins.__import__ = importing
pixrecon.entry.main()
"""
HOW = {
    "ctrl-c": "raise KeyboardInterrupt",
    "sigterm": "os.kill(os.getpid(), signal.SIGTERM)",
}


@pytest.mark.parametrize(("how", "log_json"), [("ctrl-c", "0"), ("ctrl-c", "1"), ("sigterm", "0")])
def test_an_interruption_while_the_commands_are_still_loading_is_one_line_too(
    tmp_path: Path, how: str, log_json: str
) -> None:
    script = _INTERRUPTED_IMPORT.replace("{how}", HOW[how])
    process = subprocess.Popen(
        [sys.executable, "-c", script, "reconcile", "--date", DAY.isoformat()],
        cwd=tmp_path,
        env=clean_env(log_json=log_json),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, (process.returncode, err)
    assert out == ""
    assert "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert "interrupted while starting (Ctrl-C or SIGTERM): nothing was done" in line
    if log_json == "1":
        assert json.loads(line)["event"] == "command_interrupted"
    else:
        assert line.startswith("interrupted: ")


SHUTDOWN_TIMEOUT = 2


def test_sigterm_does_not_wait_for_ever_for_a_sender_stalled_mid_body(
    database: str, tmp_path: Path
) -> None:
    """A sender that stalls mid-body would hold the graceful shutdown for ever (and
    systemd kills the receiver, in-process workers and all, after TimeoutStopSec): it is
    dropped after PIXRECON_SHUTDOWN_TIMEOUT_SECONDS, and what was acknowledged is kept."""
    port = free_port()
    env = clean_env(
        database_url=database,
        webhook_secrets="s3cret",
        log_json="0",
        shutdown_timeout_seconds=str(SHUTDOWN_TIMEOUT),
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "pixrecon", "serve", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    lines: queue.Queue[str] = queue.Queue()
    stream = process.stderr

    def read() -> None:
        for line in stream:
            lines.put(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    said: list[str] = []
    e2e = "E12345678202603101300abcdefghijk"
    try:
        while not any("Application startup complete" in line for line in said):
            said.append(lines.get(timeout=60))
        acknowledged = httpx.post(
            f"http://127.0.0.1:{port}/webhooks/qrcode/pix",
            json={"pix": [pix_body(e2e=e2e)]},
            headers={"X-Webhook-Secret": "s3cret"},
            timeout=10,
        )
        assert acknowledged.status_code == 200, acknowledged.text
        with socket.create_connection(("127.0.0.1", port)) as stalled:
            stalled.sendall(
                b"POST /webhooks/qrcode/pix HTTP/1.1\r\nHost: x\r\nX-Webhook-Secret: s3cret\r\n"
                b'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"pix":['
            )
            time.sleep(0.5)  # the request is in flight, its body incomplete
            began = time.monotonic()
            process.send_signal(signal.SIGTERM)
            code = process.wait(timeout=SHUTDOWN_TIMEOUT + 20)
            took = time.monotonic() - began
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    reader.join(timeout=10)
    while not lines.empty():
        said.append(lines.get())
    stderr = "".join(said)
    assert code == 0, stderr
    assert took < SHUTDOWN_TIMEOUT + 10, took
    assert "Traceback" not in stderr, stderr
    assert "request_dropped_at_shutdown" in stderr, stderr
    engine = create_db_engine(database)
    try:
        with session_scope(engine) as session:
            kept = session.execute(
                select(func.count())
                .select_from(table_of(InboxItem))
                .where(table_of(InboxItem).c.key == f"pix:{e2e}")
            ).scalar_one()
    finally:
        engine.dispose()
    assert kept == 1
