"""A delivery answered 2xx survives a kill -9 of the receiver right after the answer: the
acknowledgement is sent only once its transaction has committed (docs/design.md §1.1).
A real ``pixrecon serve`` process under concurrent deliveries, killed the instant one of
them is answered; every delivery it had answered must be in the inbox."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select
from sqlmodel import col

from reconcile.db import create_db_engine, session_scope
from reconcile.models import InboxItem
from tests.conftest import SECRET, free_port, wait_for
from tests.factories import pix

SENDERS = 8
KILL_AFTER = 150


@pytest.fixture(params=["postgresql", "sqlite"])
def receiver_database(
    request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path
) -> Iterator[str]:
    if request.param == "postgresql":
        yield request.getfixturevalue("postgres_database_url")
    else:
        path = tmp_path / "kill.db"
        path.write_bytes(sqlite_template.read_bytes())
        yield f"sqlite:///{path}"


def test_every_acknowledged_delivery_survives_a_kill_9_right_after_its_answer(
    receiver_database: str, tmp_path: Path
) -> None:
    port = free_port()
    env = {
        **os.environ,
        "PIXRECON_DATABASE_URL": receiver_database,
        "PIXRECON_WEBHOOK_SECRETS": SECRET,
        "PIXRECON_SCHEDULER_ENABLED": "0",
        "PIXRECON_LOG_LEVEL": "WARNING",
    }
    env.pop("PIXRECON_BROKER_URL", None)
    receiver = subprocess.Popen(
        [sys.executable, "-m", "pixrecon", "serve", "--port", str(port)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            return httpx.get(url + "/readyz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    acknowledged: list[str] = []
    lock = threading.Lock()
    killed = threading.Event()

    def send() -> None:
        with httpx.Client(base_url=url, headers={"X-Webhook-Secret": SECRET}) as http:
            while not killed.is_set():
                body = pix()
                try:
                    answer = http.post("/webhooks/qrcode/pix", json={"pix": [body]}, timeout=5)
                except httpx.HTTPError:
                    return  # the receiver is gone: this delivery was never acknowledged
                if answer.status_code != 200:
                    continue
                with lock:
                    acknowledged.append(body["endToEndId"])
                    if len(acknowledged) == KILL_AFTER and not killed.is_set():
                        # Right after an answer, with other deliveries mid-commit.
                        os.kill(receiver.pid, signal.SIGKILL)
                        killed.set()

    try:
        wait_for(ready, timeout=30, interval=0.2)
        senders = [threading.Thread(target=send) for _ in range(SENDERS)]
        for thread in senders:
            thread.start()
        for thread in senders:
            thread.join(timeout=60)
        assert killed.is_set(), f"only {len(acknowledged)} deliveries were acknowledged"
        receiver.wait(timeout=10)
    finally:
        if receiver.poll() is None:
            receiver.kill()
            receiver.wait()
    assert receiver.returncode == -signal.SIGKILL

    engine = create_db_engine(receiver_database)
    try:
        with session_scope(engine) as session:
            keys = set(session.execute(select(col(InboxItem.key))).scalars())
    finally:
        engine.dispose()
    lost = [e2e for e2e in acknowledged if f"pix:{e2e}" not in keys]
    assert len(acknowledged) >= KILL_AFTER
    assert lost == []
