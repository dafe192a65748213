"""Database engine and sessions for SQLite (single node) and PostgreSQL (production)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import (
    URL,
    BigInteger,
    ColumnElement,
    Engine,
    Table,
    any_,
    bindparam,
    create_engine,
    event,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DisconnectionError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlmodel import Session, SQLModel

# Errors that mean "storage is unavailable right now", as opposed to a bug in our SQL.
UNAVAILABLE_ERRORS: tuple[type[Exception], ...] = (
    OperationalError,
    InterfaceError,
    PoolTimeoutError,
)


SQLITE_BUSY_TIMEOUT_SECONDS = 30.0
# An execution option of connections that only read (``read_scope``).
READ_ONLY = "pixrecon_read_only"


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy drive transactions so that BEGIN IMMEDIATE below takes effect.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={int(SQLITE_BUSY_TIMEOUT_SECONDS * 1000)}")
        cursor.close()

    turns = _WriteTurns()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # A deferred transaction that later writes can fail with SQLITE_BUSY without ever
        # waiting; taking the write lock up front makes concurrent writers queue instead.
        # The pool's proxy of the driver's connection: what do_commit and do_rollback get.
        dbapi_connection = connection.connection
        if connection.get_execution_options().get(READ_ONLY):
            # WAL lets a reader run beside the writer: it need not queue for the lock.
            connection.exec_driver_sql("BEGIN")
            return
        turns.take(dbapi_connection)
        try:
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        except BaseException:
            turns.give_back(dbapi_connection)
            raise

    # After the transaction has really ended (the events fire before), and on every path
    # that ends one: a commit, a rollback, the pool's reset of a returned connection.
    dialect: Any = engine.dialect
    commit, rollback = dialect.do_commit, dialect.do_rollback

    def do_commit(dbapi_connection: Any) -> None:
        try:
            commit(dbapi_connection)
        finally:
            turns.give_back(dbapi_connection)

    def do_rollback(dbapi_connection: Any) -> None:
        try:
            rollback(dbapi_connection)
        finally:
            turns.give_back(dbapi_connection)

    dialect.do_commit = do_commit
    dialect.do_rollback = do_rollback


class _WriteTurns:
    """The threads of one process take turns at SQLite's one write lock here, in a lock
    that wakes the next one the moment it is free. Left to SQLite, a writer that finds the
    lock taken sleeps and polls (its busy handler: 1, 2, 5, 10 … 100 ms), and under a
    steady load of commits and worker batches in single-node mode that put about 300 ms
    on the p99 acknowledgement at 1,000 deliveries/s. Other processes on the same file
    still meet SQLite's own lock and busy timeout, and so does a thread that waited here
    as long as that timeout.

    A thread that someone is waiting on (``write_first``: the receiver's group commit,
    whose deliveries are not answered until it commits) and the other threads (worker
    batches) alternate when both are waiting: a commit waits for the one transaction in
    progress, never for a queue of worker batches, and the workers still get every other
    turn under a steady stream of commits."""

    def __init__(self) -> None:
        self._free = threading.Condition()
        self._holder: Any = None
        self._waiting = {True: 0, False: 0}  # by "first"
        self._last_was_first = False

    def _my_turn(self, first: bool) -> bool:
        if self._holder is not None:
            return False
        # Whoever did not have the last turn goes next; alone, anyone goes.
        others_waiting = self._waiting[not first]
        return not others_waiting or self._last_was_first != first

    def take(self, dbapi_connection: Any) -> None:
        first = bool(getattr(_thread_role, "first", False))
        deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_SECONDS
        with self._free:
            self._waiting[first] += 1
            try:
                while not self._my_turn(first):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return  # SQLite's own busy timeout decides from here
                    self._free.wait(left)
                self._holder = dbapi_connection
                self._last_was_first = first
            finally:
                self._waiting[first] -= 1
                # Another thread's turn may depend on this one no longer waiting.
                self._free.notify_all()

    def give_back(self, dbapi_connection: Any) -> None:
        with self._free:
            if self._holder is not None and self._holder is dbapi_connection:
                self._holder = None
                self._free.notify_all()


_thread_role = threading.local()


def write_first() -> None:
    """Mark the calling thread as one whose writes others wait on: on SQLite it takes the
    write lock before the threads of its process that are not so marked."""
    _thread_role.first = True


# The dialects the migrations and the per-dialect upserts are written for.
DATABASE_FORMS = "sqlite:///PATH or postgresql://USER@HOST/DATABASE"
_POSTGRES_DRIVERS = ("postgresql", "postgres", "postgresql+psycopg")


class DatabaseUrlError(ValueError):
    """A database URL pixrecon cannot use, whatever the state of the server."""


def parse_database_url(url: str) -> URL:
    """The URL, or why it cannot be one pixrecon runs on (before any driver is loaded)."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        raise DatabaseUrlError(f"not a database URL; expected {DATABASE_FORMS}") from None
    if parsed.drivername not in ("sqlite", "sqlite+pysqlite", *_POSTGRES_DRIVERS):
        raise DatabaseUrlError(
            f"{parsed.drivername!r} is not supported; pixrecon runs on SQLite or PostgreSQL "
            f"({DATABASE_FORMS})"
        )
    return parsed


def sqlite_file(url: URL) -> Path | None:
    """The file behind a SQLite URL; ``None`` for an in-memory database or another dialect."""
    database = url.database
    if url.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return None
    return None if database.startswith("file:") else Path(database)


# Fail fast when the server is gone so the receiver can answer 503 quickly.
CONNECT_TIMEOUT_SECONDS = 3


def create_db_engine(url: str, *, echo: bool = False) -> Engine:
    parsed = parse_database_url(url)
    if parsed.get_backend_name() == "sqlite":
        engine = create_engine(
            url, echo=echo, connect_args={"check_same_thread": False, "timeout": 30}
        )
        _configure_sqlite(engine)
        return engine
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    engine = create_engine(
        parsed,
        echo=echo,
        pool_size=10,
        max_overflow=20,
        pool_timeout=5,
        connect_args={"connect_timeout": CONNECT_TIMEOUT_SECONDS},
    )
    _ping_when_idle(engine)
    return engine


IDLE_BEFORE_PING_SECONDS = 1.0
"""A pooled connection idle this long is checked before use (the server may have restarted
or dropped it meanwhile); one back in use sooner is not."""


def _ping_when_idle(engine: Engine) -> None:
    """``pool_pre_ping``, but only for connections that sat idle: under load the receiver's
    group commit and the workers take a connection many times a second, and pinging each
    time was a round trip per transaction (6 % of a busy receiver's samples). A connection
    that fails its ping is replaced (the pool retries with a fresh one); one dropped while
    in use fails its statement, and the pool then replaces every connection it holds."""

    @event.listens_for(engine, "checkin")
    def _idle(_dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _ping(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        since = record.info.get("idle_since")
        if since is None or time.monotonic() - since < IDLE_BEFORE_PING_SECONDS:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:
            raise DisconnectionError("an idle connection no longer answers") from exc


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """One transaction: commit on success, roll back on error."""
    with Session(engine, expire_on_commit=False) as session, session.begin():
        yield session


@contextmanager
def read_scope(engine: Engine) -> Iterator[Session]:
    """A transaction that only reads. On SQLite it does not take the write lock every other
    transaction takes first (``BEGIN IMMEDIATE``), so a health check or a page answers
    while a long write (a worker's batch, the nightly run) holds it."""
    with (
        engine.connect().execution_options(**{READ_ONLY: True}) as connection,
        Session(bind=connection, expire_on_commit=False) as session,
        session.begin(),
    ):
        yield session


def table_of(model: type[SQLModel]) -> Table:
    """The Core table of a table model, for set-based statements (SQLModel's stubs do not
    declare ``__table__``)."""
    table: Table = model.__table__  # type: ignore[attr-defined]
    return table


def insert_for(dialect: str) -> Any:
    """The insert construct with ``ON CONFLICT`` of the dialect in use: idempotent writes
    are one statement on both SQLite and PostgreSQL (docs/design.md §1.3)."""
    return postgresql.insert if dialect == "postgresql" else sqlite.insert


def dialect_of(session: Session) -> str:
    return session.get_bind().dialect.name


def id_in(session: Session, column: ColumnElement[Any], ids: list[int]) -> ColumnElement[bool]:
    """``column`` is one of ``ids``. On PostgreSQL one array parameter, ``= ANY(…)``: an
    ``IN`` list is rendered anew for every execution, a parameter per id, which cost a
    worker about a millisecond of CPU per hundred ids (twice a batch). SQLite has no
    arrays and keeps the ``IN`` list."""
    if dialect_of(session) != "postgresql":
        return column.in_(ids)
    return column == any_(bindparam("ids", ids, type_=postgresql.ARRAY(BigInteger), unique=True))
