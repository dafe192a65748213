"""Shared fixtures: databases (SQLite and PostgreSQL), Redis, and running servers.

PostgreSQL and Redis are required under CI (``CI=true``): a missing service fails the
test. Outside CI such tests are skipped, so a laptop without services can still run the
rest of the suite.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import redis
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlmodel import SQLModel

from migrations.apply import upgrade
from pixrecon.node import Node
from reconcile.db import create_db_engine, session_scope
from reconcile.queries import inbox_summary
from reconcile.settings import Settings
from sandbox.server import BackgroundServer

POSTGRES_URL = os.environ.get(
    "PIXRECON_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
REDIS_URL = os.environ.get("PIXRECON_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
# Worker processes that tests start serve no metrics unless a test gives them a port: two
# at once (or a developer's own worker) would otherwise contend for the default one.
os.environ.setdefault("PIXRECON_WORKER_METRICS_PORT", "0")
os.environ.setdefault("PIXRECON_PROVIDER_RETRY_SECONDS", "1")


def service_missing(service: str, reason: str) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{service} is required under CI but is not usable: {reason}")
    pytest.skip(f"{service} not available ({reason}); required under CI")


@pytest.fixture(scope="session")
def postgres_admin_url() -> str:
    try:
        engine = create_engine(POSTGRES_URL, connect_args={"connect_timeout": 3})
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
        engine.dispose()
    except Exception as exc:
        service_missing("PostgreSQL", f"{type(exc).__name__}: {exc}")
    return POSTGRES_URL


@pytest.fixture(scope="session")
def postgres_url(postgres_admin_url: str) -> Iterator[str]:
    """A database of its own for this test session, migrated once."""
    name = f"pixrecon_test_{uuid.uuid4().hex[:10]}"
    admin = create_engine(postgres_admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(postgres_admin_url).set(database=name).render_as_string(hide_password=False)
    engine = create_db_engine(url)
    upgrade(engine)
    engine.dispose()
    yield url
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "template.db"
    engine = create_db_engine(f"sqlite:///{path}")
    upgrade(engine)
    # Closing the last connection checkpoints the WAL into the file that tests copy.
    engine.dispose()
    return path


def truncate(engine: Engine) -> None:
    tables = ", ".join(f'"{t.name}"' for t in SQLModel.metadata.sorted_tables)
    with engine.begin() as connection:
        connection.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))


@pytest.fixture(
    params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty, migrated database — once on SQLite, once on PostgreSQL."""
    if request.param == "sqlite":
        path = tmp_path / "pixrecon.db"
        shutil.copy(request.getfixturevalue("sqlite_template"), path)
        yield f"sqlite:///{path}"
        return
    yield request.getfixturevalue("postgres_database_url")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def blank_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database of its own, for a migration to start from an older revision."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'old.db'}"
        return
    admin_url = request.getfixturevalue("postgres_admin_url")
    name = f"pixrecon_refs_{uuid.uuid4().hex[:10]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture
def postgres_database_url(postgres_url: str) -> str:
    """The session's PostgreSQL database, emptied for this test."""
    engine = create_db_engine(postgres_url)
    truncate(engine)
    engine.dispose()
    return postgres_url


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    engine = create_db_engine(database_url)
    yield engine
    engine.dispose()


@pytest.fixture
def redis_url() -> Iterator[str]:
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.RedisError as exc:
        service_missing("Redis", f"{type(exc).__name__}: {exc}")
    client.flushdb()
    yield REDIS_URL
    client.flushdb()
    client.close()


SECRET = "test-secret-value"


def free_port() -> int:
    """A loopback port nobody listens on right now (for servers run as processes)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def make_settings(database_url: str, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "database_url": database_url,
        "webhook_secrets": [SECRET],
        "sweep_interval_seconds": 0.2,
        "redispatch_after_seconds": 0.5,
        "worker_threads": 2,
        # Tests drive the periodic jobs themselves; one test runs the scheduler for real.
        "scheduler_enabled": False,
        # A provider that fails in a test fails fast (the default rides out minutes).
        "provider_retry_seconds": 1.0,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[arg-type]


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0, interval: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s")


class RunningNode:
    """A receiver with in-process workers, serving real HTTP on loopback."""

    def __init__(self, node: Node, server: BackgroundServer) -> None:
        self.node = node
        self.server = server
        self.url = server.url
        self.http = httpx.Client(base_url=server.url, headers={"X-Webhook-Secret": SECRET})

    def post_pix(self, body: object, path: str = "/webhooks/qrcode/pix") -> httpx.Response:
        return self.http.post(path, json=body)

    def summary(self) -> dict[str, int]:
        with session_scope(self.node.engine) as session:
            return inbox_summary(session)

    def wait_processed(self, timeout: float = 10.0) -> dict[str, int]:
        wait_for(lambda: self.summary()["pending"] == 0, timeout)
        return self.summary()


@pytest.fixture
def running_node(engine: Engine) -> Iterator[RunningNode]:
    settings = make_settings(str(engine.url.render_as_string(hide_password=False)))
    with Node(settings, engine) as node, BackgroundServer(node.app) as server:
        running = RunningNode(node, server)
        yield running
        running.http.close()


class RedisProcess:
    """A redis-server of the test's own, so that it can be killed and brought back."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            service_missing("Redis", "redis-server binary not found")
        self.binary = str(binary)
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis.from_url(self.url, socket_connect_timeout=1)

        def up() -> bool:
            try:
                return bool(client.ping())
            except redis.RedisError:
                return False

        wait_for(up, timeout=10)
        client.close()

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None


@pytest.fixture
def redis_process() -> Iterator[RedisProcess]:
    server = RedisProcess()
    server.start()
    yield server
    server.kill()
