"""``pixrecon db upgrade``: the schema, by Alembic migrations."""

from __future__ import annotations

from typing import Annotated

import typer

from pixrecon.commands.common import console
from reconcile.settings import get_settings

db_app = typer.Typer(help="Database schema (Alembic migrations).", no_args_is_help=True)


@db_app.command("upgrade")
def db_upgrade(
    revision: Annotated[str, typer.Option(help="target revision")] = "head",
) -> None:
    """Apply the migrations to PIXRECON_DATABASE_URL."""
    from migrations.apply import current_revision, upgrade
    from reconcile.db import create_db_engine

    settings = get_settings()
    engine = create_db_engine(settings.database_url)
    upgrade(engine, revision)
    console.print(f"database at revision {current_revision(engine)}")
