"""What every benchmark needs: a scratch PostgreSQL database and the version measured."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

DEFAULT_URL = os.environ.get(
    "PIXRECON_BENCH_DATABASE_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def psycopg_url(url: str) -> str:
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


@contextmanager
def scratch_database(admin_url: str, keep: bool) -> Iterator[str]:
    """A fresh database beside the one ``admin_url`` names; dropped afterwards."""
    name = f"pixrecon_bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    try:
        yield url
    finally:
        if keep:
            print(f"kept database {name}")
        else:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def engine_version(paths: tuple[str, ...] = ("reconcile", "migrations")) -> dict[str, Any]:
    """Which code was measured: the commit, and files under ``paths`` changed since."""
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        try:
            done = subprocess.run(
                ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
            )
        except OSError:
            return ""
        return done.stdout

    # Porcelain lines are "XY path"; X may be a space, so the output is not stripped.
    dirty = git("status", "--porcelain", "--", *paths).splitlines()
    commit = git("rev-parse", "HEAD").strip()
    return {"commit": commit or None, "uncommitted": [line[3:] for line in dirty if line]}
