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

    from migrations.apply import current_revision, is_known, upgrade
    from pixrecon.bootstrap import StartupError, database_engine, why_unavailable

    settings = get_settings()
    try:
        engine = database_engine(settings, may_create=True)
    except StartupError as exc:
        raise fail(escape(str(exc))) from None
    try:
        before = current_revision(engine)
        if before is not None and not is_known(engine, before):
            raise fail(
                f"the database schema is at revision {escape(before)}, newer than this "
                "pixrecon knows: run the pixrecon release that migrated it"
            )
        upgrade(engine, revision)
        after = current_revision(engine)
        # Alembic's upgrade to an earlier revision does nothing, and says nothing.
        unchanged = revision not in ("head", after) and after == before
        kept = (
            f" (already past {escape(revision)}: an upgrade never goes back)" if unchanged else ""
        )
        console.print(f"database at revision {after}{kept}")
    except CommandError as exc:  # e.g. a revision that does not exist
        raise fail(f"cannot migrate to {escape(revision)!r}: {escape(str(exc))}") from None
    except SQLAlchemyError as exc:
        raise fail(escape(why_unavailable(settings.database_url, exc))) from None
    finally:
        engine.dispose()
