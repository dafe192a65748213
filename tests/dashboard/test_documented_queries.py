"""Every query docs/dashboards.md gives for BI tools runs against the schema as migrated:
a column renamed or a view changed without the document would hand a finance team a
query that fails (or, worse, one that reads another column). On PostgreSQL, as written;
Grafana's macros and Metabase's ``{{day}}`` replaced by what those tools put there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import text

from reconcile.db import create_db_engine

DOC = Path(__file__).parents[2] / "docs" / "dashboards.md"
# What Grafana and Metabase substitute for their macros before the query reaches the
# database.
MACROS = (
    (re.compile(r"\$__timeGroupAlias\(([^,]+), '1h'\)"), r"date_trunc('hour', \1) AS time"),
    (re.compile(r"\$__timeFilter\(([^)]+)\)"), r"\1 >= now() - interval '30 days'"),
    (re.compile(r"\$__timeFrom\(\)"), "(now() - interval '30 days')"),
    (re.compile(r"\$__timeTo\(\)"), "now()"),
    (re.compile(r"\{\{day\}\}"), "DATE '2026-03-02'"),
)


def _queries() -> list[str]:
    document = DOC.read_text(encoding="utf-8")
    fenced = re.findall(r"```sql\n(.*?)```", document, re.S)
    # The panels' one-line queries, in the Metabase table.
    inline = re.findall(r"`(SELECT [^`]+)`", document)
    # Setting up the read-only role creates objects outside the database under test.
    return [q for q in [*fenced, *inline] if "GRANT" not in q and "CREATE ROLE" not in q]


def _runnable(query: str) -> str:
    for pattern, replacement in MACROS:
        query = pattern.sub(replacement, query)
    return query


def test_the_document_holds_its_queries() -> None:
    assert len(_queries()) >= 12


@pytest.mark.postgres
@pytest.mark.parametrize("query", _queries(), ids=lambda q: " ".join(q.split())[:60])
def test_each_documented_query_runs(postgres_database_url: str, query: str) -> None:
    engine = create_db_engine(postgres_database_url)
    try:
        with engine.connect() as connection:
            connection.execute(text(_runnable(query))).all()
    finally:
        engine.dispose()
