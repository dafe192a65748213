"""PostgreSQL connections are checked before use only after sitting idle: one the server
dropped meanwhile is replaced without an error, and one in steady use costs no extra
round trip per transaction."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, text

from reconcile import db

pytestmark = pytest.mark.postgres


@pytest.fixture
def engine(postgres_database_url: str) -> Iterator[Engine]:
    created = db.create_db_engine(postgres_database_url)
    yield created
    created.dispose()


def _backend(engine: Engine) -> int:
    with engine.connect() as connection:
        pid: int = connection.execute(text("SELECT pg_backend_pid()")).scalar_one()
        return pid


def _count_pings(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    pings: list[int] = []
    real = engine.dialect.do_ping

    def counted(connection: Any) -> bool:
        pings.append(1)
        return real(connection)

    monkeypatch.setattr(engine.dialect, "do_ping", counted)
    return pings


def test_a_connection_the_server_dropped_while_idle_is_replaced_before_use(
    engine: Engine, postgres_admin_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(db, "IDLE_BEFORE_PING_SECONDS", 0.0)
    pings = _count_pings(engine, monkeypatch)
    first = _backend(engine)
    admin = create_engine(postgres_admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": first})
    admin.dispose()

    # No error reaches the caller: the dead connection failed its ping and was replaced.
    assert _backend(engine) != first
    assert pings


def test_a_connection_back_in_use_within_a_second_is_not_pinged(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    pings = _count_pings(engine, monkeypatch)
    backends = {_backend(engine) for _ in range(50)}
    assert len(backends) == 1
    assert pings == []
