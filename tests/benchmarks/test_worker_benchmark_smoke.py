"""The worker benchmark at a tiny size: every stored Pix becomes one row with its amount,
through both readings (documented and tolerant). Times are never asserted: docs/design.md
§7's targets are benchmarks, not timed tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.support import database_left, run_benchmark


@pytest.mark.postgres
def test_worker_benchmark_runs_briefly(postgres_admin_url: str, tmp_path: Path) -> None:
    out = tmp_path / "worker.json"
    result = run_benchmark(
        "worker.py",
        ["--items", "250", "--batch", "100", "--database-url", postgres_admin_url],
        out,
        timeout=300,
    )
    assert (result["items"], result["rows"]) == (250, 250)
    assert result["cpu_us_per_item"] > 0
    assert not database_left(postgres_admin_url, result["database"]), "database not dropped"
