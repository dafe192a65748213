"""The confirmation benchmark at a tiny size: both ways settle every notified Pix, and the
day's fetch makes no look-up of its own for a Pix the listing showed. Times are never
asserted: docs/design.md §7's targets are benchmarks, not timed tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.support import database_left, run_benchmark


@pytest.mark.postgres
def test_confirm_benchmark_runs_briefly(postgres_admin_url: str, tmp_path: Path) -> None:
    out = tmp_path / "confirm.json"
    result = run_benchmark(
        "confirm.py",
        ["--pix", "60", "--page-size", "25", "--database-url", postgres_admin_url],
        out,
        timeout=300,
    )
    looked_up, fetched = result["results"]
    assert (looked_up["look_ups"], looked_up["confirmed"]) == (60, 60)
    assert (fetched["look_ups"], fetched["listing_pages"], fetched["confirmed"]) == (0, 3, 60)
    assert not database_left(postgres_admin_url, result["database"]), "database not dropped"
