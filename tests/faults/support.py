"""What every fault test shares: real processes on loopback, a load of Pix deliveries
each with its own ``endToEndId``, and the accounting identity checked at the end —
acknowledged = processed (+ duplicates + quarantined), lost = 0, one effect each."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from sqlalchemy import func, select
from sqlmodel import col

from reconcile.db import create_db_engine, session_scope
from reconcile.models import InboxItem, ItemStatus, PixReceived, QuarantinedDelivery
from tests.conftest import SECRET, free_port, wait_for
from tests.factories import pix

PIX_PATH = "/webhooks/qrcode/pix"


def pixrecon_env(database: str, broker: str | None = None, **settings: str) -> dict[str, str]:
    """The environment of the processes a fault test starts: none of the caller's own
    ``PIXRECON_*``, the test's webhook secret, no periodic jobs, warnings only, no worker
    metrics port, a sweeper quick to re-send what a fault left pending; ``settings`` (by
    variable name) on top."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIXRECON_")}
    env |= {
        "PIXRECON_DATABASE_URL": database,
        "PIXRECON_WEBHOOK_SECRETS": SECRET,
        "PIXRECON_SCHEDULER_ENABLED": "0",
        "PIXRECON_LOG_LEVEL": "WARNING",
        "PIXRECON_WORKER_METRICS_PORT": "0",
        "PIXRECON_SWEEP_INTERVAL_SECONDS": "0.5",
        "PIXRECON_REDISPATCH_AFTER_SECONDS": "2",
    }
    if broker is not None:
        env["PIXRECON_BROKER_URL"] = broker
        # Dramatiq's supervisor restarts a worker process that lost a service quickly.
        env["dramatiq_restart_delay"] = "500"
    return env | settings


def start_worker(
    env: Mapping[str, str], cwd: Path, *, processes: int = 1, threads: int = 4
) -> subprocess.Popen[bytes]:
    return start_pixrecon(
        "worker",
        "--processes",
        str(processes),
        "--threads",
        str(threads),
        env=env,
        cwd=cwd,
        log=cwd / "worker.log",
    )


def start_pixrecon(
    *args: str, env: Mapping[str, str], cwd: Path, log: Path | None = None
) -> subprocess.Popen[bytes]:
    output = log.open("ab") if log is not None else subprocess.DEVNULL
    return subprocess.Popen(
        [sys.executable, "-m", "pixrecon", *args],
        env=dict(env),
        cwd=cwd,
        stdout=output,
        stderr=output,
        # Its own process group: a kill -9 of the whole tree reaches every child.
        start_new_session=True,
    )


def kill_tree(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL to the process and everything it started, as a crash or the OOM killer
    would: no handler runs, nothing is flushed."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            kill_tree(process)


@dataclass
class Receiver:
    """A ``pixrecon serve`` process of the test's own."""

    env: dict[str, str]
    cwd: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.process = start_pixrecon(
            "serve",
            "--port",
            str(self.port),
            env=self.env,
            cwd=self.cwd,
            log=self.cwd / "serve.log",
        )

        def ready() -> bool:
            try:
                return httpx.get(self.url + "/readyz", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(ready, timeout=30, interval=0.2)

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process)


@dataclass
class Load:
    """Deliveries from several threads; every acknowledged ``endToEndId`` is recorded the
    moment its 2xx arrives. ``on_ack(n)`` runs after the n-th acknowledgement."""

    url: str
    senders: int = 8
    acknowledged: list[str] = field(default_factory=list)
    refused: int = 0
    on_ack: Callable[[int], None] = lambda _n: None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> None:
        self._threads = [threading.Thread(target=self._send) for _ in range(self.senders)]
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)

    def _send(self) -> None:
        with httpx.Client(base_url=self.url, headers={"X-Webhook-Secret": SECRET}) as http:
            while not self._stop.is_set():
                body = pix()
                try:
                    answer = http.post(PIX_PATH, json={"pix": [body]}, timeout=10)
                except httpx.HTTPError:
                    # No answer: never acknowledged. The provider would retry it.
                    with self._lock:
                        self.refused += 1
                    continue
                with self._lock:
                    if answer.status_code != 200:
                        self.refused += 1
                        continue
                    self.acknowledged.append(body["endToEndId"])
                    n = len(self.acknowledged)
                self.on_ack(n)


@dataclass(frozen=True)
class Accounts:
    acknowledged: int
    items: int
    processed: int
    pending: int
    failed: int
    pix_rows: int
    quarantined: int
    lost: list[str]
    """Acknowledged ``endToEndId``s with no inbox item."""
    unprocessed: list[str]
    """Acknowledged ``endToEndId``s with no ``pix_received`` row."""


def items_with_key(database_url: str, key: str) -> int:
    """Inbox items of one business key, read on a connection of the test's own."""
    engine = create_db_engine(database_url)
    try:
        with session_scope(engine) as session:
            found = select(func.count()).where(col(InboxItem.key) == key)
            return int(session.execute(found).scalar_one())
    finally:
        engine.dispose()


def accounts(database_url: str, acknowledged: list[str]) -> Accounts:
    engine = create_db_engine(database_url)
    try:
        with session_scope(engine) as session:
            keys = set(session.execute(select(col(InboxItem.key))).scalars())
            rows = set(session.execute(select(col(PixReceived.end_to_end_id))).scalars())
            by_status = dict(
                session.execute(
                    select(col(InboxItem.status), func.count()).group_by(col(InboxItem.status))
                ).all()
            )
            quarantined = session.execute(
                select(func.count()).select_from(QuarantinedDelivery)
            ).scalar_one()
    finally:
        engine.dispose()
    return Accounts(
        acknowledged=len(acknowledged),
        items=len(keys),
        processed=by_status.get(ItemStatus.PROCESSED.value, 0),
        pending=by_status.get(ItemStatus.PENDING.value, 0),
        failed=by_status.get(ItemStatus.FAILED.value, 0),
        pix_rows=len(rows),
        quarantined=int(quarantined),
        lost=[e2e for e2e in acknowledged if f"pix:{e2e}" not in keys],
        unprocessed=[e2e for e2e in acknowledged if e2e not in rows],
    )


def assert_every_acknowledged_delivery_had_one_effect(
    database_url: str, acknowledged: list[str]
) -> Accounts:
    """The identity every fault test ends with. Items stored but never acknowledged (the
    process died between commit and answer) may be there too: the provider retries them,
    and the retry is a duplicate, so each has one effect as well."""
    found = accounts(database_url, acknowledged)
    assert len(set(acknowledged)) == len(acknowledged), "an endToEndId acknowledged twice"
    assert found.lost == [], f"{len(found.lost)} acknowledged deliveries lost"
    assert found.unprocessed == [], f"{len(found.unprocessed)} acknowledged never processed"
    assert found.pending == 0
    assert found.failed == 0
    # One effect each: every item is one Pix row, and none without an item.
    assert found.pix_rows == found.items == found.processed
    assert found.items >= found.acknowledged
    return found
