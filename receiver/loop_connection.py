"""The group commit's own PostgreSQL connection, awaited on the receiver's event loop.

A writer thread waiting on PostgreSQL gives up the GIL and must win it back from the
event loop once the answer comes, which under load costs up to the interpreter's switch
interval every time, on every commit (docs/benchmarks.md, "A group commit awaited on the
event loop"). Awaited on the loop itself, the commit's round trip costs the loop nothing
while it waits, and no thread has to be woken.

The statement is the one ``reconcile.inbox`` runs on PostgreSQL (``PG_GROUP_STATEMENT``),
alone in autocommit: its answer comes once it has committed. Errors are translated at
this boundary into SQLAlchemy's, so that the receiver tells an unavailable database (503)
from anything else as it does for every other write.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg
from sqlalchemy import Engine
from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg
from sqlalchemy.exc import DBAPIError

from reconcile.db import CONNECT_TIMEOUT_SECONDS, IDLE_BEFORE_PING_SECONDS
from reconcile.inbox import PG_GROUP_STATEMENT, Delivery, GroupWrite, StoreResult

_DIALECT = PGDialect_psycopg()  # type: ignore[no-untyped-call]
# psycopg's own parameter style, compiled once.
_STATEMENT = str(PG_GROUP_STATEMENT.compile(dialect=_DIALECT))


class LoopConnection:
    """One connection, opened on first use and opened again after it failed. Used by one
    event loop, one statement at a time (the group commit writes one batch at a time)."""

    def __init__(self, engine: Engine) -> None:
        url = engine.url.set(drivername="postgresql")
        self._conninfo = url.render_as_string(hide_password=False)
        self._connection: psycopg.AsyncConnection[Any] | None = None
        self._idle_since = 0.0

    async def store(self, deliveries: Sequence[Delivery], now: datetime) -> list[StoreResult]:
        """The deliveries and their items, committed; SQLAlchemy's errors on failure
        (``OperationalError`` and the like when the database cannot be reached)."""
        write = GroupWrite.of(deliveries, now)
        try:
            connection = await self._ready()
            cursor = await connection.execute(_STATEMENT, write.params)
            rows = await cursor.fetchall()
        except psycopg.Error as exc:
            if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
                await self.close()
            raise DBAPIError.instance(
                _STATEMENT, None, exc, psycopg.Error, dialect=_DIALECT
            ) from None
        finally:
            self._idle_since = time.monotonic()
        return write.results(rows)

    async def _ready(self) -> psycopg.AsyncConnection[Any]:
        connection = self._connection
        if connection is not None and not connection.closed:
            # As the engine's pool does (reconcile.db): a connection that sat idle may
            # have been dropped by a server that restarted meanwhile; one in steady use
            # is not checked, which would cost a round trip per commit.
            if time.monotonic() - self._idle_since < IDLE_BEFORE_PING_SECONDS:
                return connection
            try:
                await connection.execute("SELECT 1")
                return connection
            except psycopg.OperationalError:
                await self.close()
        self._connection = await psycopg.AsyncConnection.connect(
            self._conninfo, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS
        )
        return self._connection

    async def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()
