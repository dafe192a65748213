"""Start-up checks shared by the commands: logging, database, schema version."""

from __future__ import annotations

import re

from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from migrations.apply import current_revision, head_revision, is_known, upgrade
from reconcile.db import DatabaseUrlError, create_db_engine, sqlite_file
from reconcile.logs import configure_logging
from reconcile.settings import Settings


class StartupError(Exception):
    """A condition that stops a command before it does anything."""


def setup_logging(settings: Settings) -> None:
    configure_logging(settings.log_level, json=settings.log_json)


def shown_url(url: str) -> str:
    """A database URL fit for a terminal or a log: never its password."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return re.sub(r"://([^:/@]*):[^@]*@", r"://\1:***@", url)


def why_unavailable(url: str, exc: BaseException) -> str:
    """What the driver said, reduced to the part a person acts on."""
    said = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    reason = " ".join((said[0] if said else type(exc).__name__).split())
    # psycopg: "connection failed: connection to server at …, port … failed: FATAL: …"
    reason = reason.rsplit(" failed: ", 1)[-1].removeprefix("FATAL: ")
    if "readonly database" in reason or "read-only transaction" in reason:
        # SQLite opened read-only (a file or folder it may not write, ``mode=ro``), or a
        # PostgreSQL replica: the server is fine, the command needs to write.
        return (
            f"the database at {shown_url(url)} is read-only ({reason}): this command writes "
            "to it; point PIXRECON_DATABASE_URL at a database it may write to, or give it "
            "write access"
        )
    if "does not exist" in reason:
        return (
            f"the database at {shown_url(url)} cannot be used: {reason}; create it, then run "
            "`pixrecon db upgrade` (or fix PIXRECON_DATABASE_URL)"
        )
    return (
        f"cannot use the database at {shown_url(url)}: {reason}; check PIXRECON_DATABASE_URL "
        "and that the database server is running"
    )


def database_engine(settings: Settings, *, may_create: bool) -> Engine:
    """An engine on the configured database. Only the commands that own the schema
    (``serve``, ``demo``, ``db upgrade``) may bring a SQLite file into existence: for the
    others a missing file is a wrong setting, not an empty database."""
    url = settings.database_url
    try:
        engine = create_db_engine(url)
    except DatabaseUrlError as exc:
        raise StartupError(f"PIXRECON_DATABASE_URL={shown_url(url)!r}: {exc}") from None
    if engine.url.get_backend_name() == "sqlite" and engine.url.database in (None, "", ":memory:"):
        engine.dispose()
        # Each connection would see a database of its own, empty, gone with the process:
        # migrated by one connection and missing its tables on the next.
        # A SQLite URL carries no password: shown as given, not re-rendered (%3Amemory%3A).
        raise StartupError(
            f"PIXRECON_DATABASE_URL={url!r} is an in-memory database, empty for "
            "every connection and gone when the command ends: point PIXRECON_DATABASE_URL "
            "at a file (sqlite:///PATH) or at PostgreSQL"
        )
    path = sqlite_file(engine.url)
    if path is not None:
        where = path.absolute()
        if not where.parent.is_dir():
            raise StartupError(
                f"PIXRECON_DATABASE_URL points into {where.parent}, a folder that does not "
                "exist: create it, or point PIXRECON_DATABASE_URL somewhere else"
            )
        if not may_create and not where.exists():
            raise StartupError(
                f"there is no database at {where}: point PIXRECON_DATABASE_URL at yours "
                "(sqlite:///PATH or postgresql://…), or create this one with "
                "`pixrecon db upgrade`"
            )
    return engine


def _check_schema(engine: Engine) -> None:
    current, head = current_revision(engine), head_revision(engine)
    if current == head:
        return
    if current is None:
        raise StartupError("the database has no pixrecon tables yet: run `pixrecon db upgrade`")
    if not is_known(engine, current):
        # `pixrecon db upgrade` cannot help: it knows no way from a revision it has never
        # seen. A newer release migrated this database.
        raise StartupError(
            f"the database schema is at revision {current}, newer than this pixrecon knows "
            f"(its newest is {head}): run the pixrecon release that migrated it"
        )
    raise StartupError(
        f"the database schema is at revision {current}, this pixrecon needs {head}: "
        "run `pixrecon db upgrade` first"
    )


def open_database(settings: Settings, *, auto_upgrade: bool) -> Engine:
    """The embedded SQLite database is migrated on start; a shared PostgreSQL is migrated
    only on purpose (``pixrecon db upgrade``), so several processes never race to do it."""
    # Here rather than at the top: see migrations/apply.py.
    from alembic.util import CommandError

    embedded = auto_upgrade and settings.uses_sqlite
    engine = database_engine(settings, may_create=embedded)
    try:
        if embedded:
            upgrade(engine)
        else:
            _check_schema(engine)
    except SQLAlchemyError as exc:
        engine.dispose()
        raise StartupError(why_unavailable(settings.database_url, exc)) from None
    except CommandError as exc:
        engine.dispose()
        raise StartupError(f"cannot migrate the database: {exc}") from None
    except StartupError:
        engine.dispose()
        raise
    return engine
