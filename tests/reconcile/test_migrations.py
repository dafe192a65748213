from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine
from sqlmodel import SQLModel

from migrations.apply import head_revision, is_up_to_date
from reconcile import models  # noqa: F401  (registers the tables)


def test_migrations_create_exactly_the_models(engine: Engine) -> None:
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        differences = compare_metadata(context, SQLModel.metadata)
    assert differences == []
    assert is_up_to_date(engine)
    assert head_revision(engine) is not None
