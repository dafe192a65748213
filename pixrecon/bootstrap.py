"""Start-up checks shared by the commands: logging, database, schema version."""

from __future__ import annotations

from sqlalchemy import Engine

from migrations.apply import is_up_to_date, upgrade
from reconcile.db import create_db_engine
from reconcile.logs import configure_logging
from reconcile.settings import Settings


class StartupError(Exception):
    """A condition that stops a command before it does anything."""


def setup_logging(settings: Settings) -> None:
    configure_logging(settings.log_level, json=settings.log_json)


def open_database(settings: Settings, *, auto_upgrade: bool) -> Engine:
    """The embedded SQLite database is migrated on start; a shared PostgreSQL is migrated
    only on purpose (``pixrecon db upgrade``), so several processes never race to do it."""
    engine = create_db_engine(settings.database_url)
    if auto_upgrade and settings.uses_sqlite:
        upgrade(engine)
    elif not is_up_to_date(engine):
        raise StartupError("the database schema is not up to date: run `pixrecon db upgrade` first")
    return engine
