"""Alembic environment: migrations run against the engine pixrecon hands over."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Engine
from sqlmodel import SQLModel

from reconcile import models  # noqa: F401  (registers every table on the metadata)
from reconcile.db import create_db_engine
from reconcile.settings import get_settings

target_metadata = SQLModel.metadata


def run_migrations_online() -> None:
    engine: Engine | None = context.config.attributes.get("engine")
    if engine is None:
        engine = create_db_engine(get_settings().database_url)
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=connection.dialect.name == "sqlite",
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


run_migrations_online()
