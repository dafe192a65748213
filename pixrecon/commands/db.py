"""``pixrecon db upgrade``: the schema, by Alembic migrations."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from pixrecon.commands.common import console, fail
from reconcile.settings import get_settings

db_app = typer.Typer(help="Database schema (Alembic migrations).", no_args_is_help=True)


@db_app.command("upgrade")
def db_upgrade(
    revision: Annotated[str, typer.Option(help="target revision")] = "head",
) -> None:
    """Apply the migrations to PIXRECON_DATABASE_URL (a SQLite file is created)."""
    from alembic.util import CommandError
    from sqlalchemy.exc import SQLAlchemyError

    from migrations.apply import current_revision, upgrade
    from pixrecon.bootstrap import StartupError, database_engine, why_unavailable

    settings = get_settings()
    try:
        engine = database_engine(settings, may_create=True)
    except StartupError as exc:
        raise fail(escape(str(exc))) from None
    try:
        upgrade(engine, revision)
        console.print(f"database at revision {current_revision(engine)}")
    except CommandError as exc:  # e.g. a revision that does not exist
        raise fail(f"cannot migrate to {escape(revision)!r}: {escape(str(exc))}") from None
    except SQLAlchemyError as exc:
        raise fail(escape(why_unavailable(settings.database_url, exc))) from None
    finally:
        engine.dispose()
