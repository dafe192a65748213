"""Production mode end to end: receiver → Redis → a real ``pixrecon worker`` process →
PostgreSQL; and a Redis outage (a real redis-server killed) loses nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from sqlalchemy import func, select

from pixrecon.node import Node
from reconcile.db import create_db_engine, session_scope
from reconcile.models import PixReceived
from sandbox.server import BackgroundServer
from tests.conftest import RedisProcess, RunningNode, make_settings, wait_for
from tests.factories import pix

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


def _pix_rows(url: str) -> int:
    engine = create_db_engine(url)
    try:
        with session_scope(engine) as session:
            return int(session.execute(select(func.count()).select_from(PixReceived)).scalar_one())
    finally:
        engine.dispose()


def test_receiver_redis_worker_process_postgres(
    postgres_database_url: str, redis_process: RedisProcess
) -> None:
    database_url = postgres_database_url
    env = {
        **os.environ,
        "PIXRECON_DATABASE_URL": database_url,
        "PIXRECON_BROKER_URL": redis_process.url,
        "PIXRECON_SWEEP_INTERVAL_SECONDS": "0.5",
        "PIXRECON_REDISPATCH_AFTER_SECONDS": "1",
        "dramatiq_restart_delay": "500",
    }
    worker = subprocess.Popen(
        [sys.executable, "-m", "pixrecon", "worker", "--processes", "1", "--threads", "2"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    engine = create_db_engine(database_url)
    settings = make_settings(database_url, broker_url=redis_process.url)
    try:
        with Node(settings, engine) as node, BackgroundServer(node.app) as server:
            running = RunningNode(node, server)
            assert running.post_pix({"pix": [pix(), pix()]}).status_code == 200
            wait_for(lambda: _pix_rows(database_url) == 2, timeout=30)

            # Redis dies: deliveries are still acknowledged, because they are committed.
            redis_process.kill()
            assert running.post_pix({"pix": [pix()]}).status_code == 200
            time.sleep(1)
            assert _pix_rows(database_url) == 2
            # Redis comes back empty; the worker's sweeper re-sends what was never processed.
            redis_process.start()
            wait_for(lambda: _pix_rows(database_url) == 3, timeout=30)
            assert running.summary()["pending"] == 0
            running.http.close()
    finally:
        worker.terminate()
        try:
            _, stderr = worker.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            _, stderr = worker.communicate()
        engine.dispose()
    # SIGTERM is a graceful stop for a Dramatiq worker.
    assert worker.returncode == 0, stderr.decode()[-3000:]
