"""Applying the Alembic migrations from an installed package (``pixrecon db upgrade``, and
the start-up of the embedded SQLite database)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Engine

# Alembic is imported where it is used: importing it takes a fifth of a second, which every
# command paid at start-up, `--help` and a mistyped option included.
if TYPE_CHECKING:
    from alembic.config import Config


def alembic_config(engine: Engine) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(Path(__file__).parent))
    # The engine travels as an attribute so env.py reuses it (and its SQLite pragmas).
    config.attributes["engine"] = engine
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    from alembic import command

    command.upgrade(alembic_config(engine), revision)


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        rev: str | None = MigrationContext.configure(connection).get_current_revision()
        return rev


def head_revision(engine: Engine) -> str | None:
    from alembic.script import ScriptDirectory

    head: str | None = ScriptDirectory.from_config(alembic_config(engine)).get_current_head()
    return head


def is_known(engine: Engine, revision: str) -> bool:
    """Whether this release's migrations include ``revision`` (a newer release's do not)."""
    from alembic.script import ScriptDirectory
    from alembic.util import CommandError

    try:
        return (
            ScriptDirectory.from_config(alembic_config(engine)).get_revision(revision) is not None
        )
    except CommandError:
        return False


def is_up_to_date(engine: Engine) -> bool:
    return current_revision(engine) == head_revision(engine)
