"""The retention benchmark at a tiny size: the script loads, prunes with ingest going on,
reports both, and cleans up after itself. Times and latencies are never asserted:
docs/design.md §7's targets are benchmarks, not timed tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.support import database_left, run_benchmark


@pytest.mark.postgres
def test_prune_benchmark_runs_small(postgres_admin_url: str, tmp_path: Path) -> None:
    out = tmp_path / "prune.json"
    result = run_benchmark(
        "prune.py",
        [
            "--items",
            "2000",
            "--batch",
            "500",
            "--rate",
            "50",
            "--baseline-seconds",
            "0.5",
            "--database-url",
            postgres_admin_url,
        ],
        out,
        timeout=120,
    )

    assert result["loaded"]["inbox_item"] == 2000
    prune = result["prune"]
    tables = prune["report"]["tables"]
    # Old processed items of reconciled days: those no result points at are deleted, the
    # others lose their payload and their Pix received is masked.
    assert tables["inbox_item"]["deleted"] > 0
    assert tables["inbox_item"]["raw_removed"] == tables["pix_received"]["masked"] > 0
    assert prune["items_released"] > 0
    kept = prune["report"]["kept"]
    assert kept["needs_a_person"] > 0
    assert kept["day_not_reconciled"] > 0
    assert result["ingest"]["alone"]["inserts"] > 0
    assert result["ingest"]["errors"] == []
    assert result["shipped_schema"] is True

    assert not database_left(postgres_admin_url, result["database"]), "database not dropped"
