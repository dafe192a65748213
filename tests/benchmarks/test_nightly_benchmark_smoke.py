"""The nightly benchmark at a tiny size: the script runs end to end on PostgreSQL, the day
it generates shows every status of docs/design.md §5, and it cleans up after itself. Times and
memory are never asserted: docs/design.md §7's targets are benchmarks, not timed tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.support import database_left, run_benchmark

MOVEMENTS = {
    "matched",
    "missing_webhook",
    "unconfirmed_webhook",
    "amount_mismatch",
    "status_mismatch",
    "pending",
    "duplicate",
}
CHARGES = {
    "paid",
    "underpaid",
    "overpaid",
    "paid_twice",
    "unpaid",
    "expired",
    "refunded",
    "partially_refunded",
}
PAYOUTS = {"settled", "rejected", "pending", "refunded", "unknown_to_provider"}
INFRACTIONS = {"open_case", "debit_without_case", "debit_never_came", "amount_mismatch", "closed"}


@pytest.mark.postgres
def test_nightly_benchmark_runs_small_day(postgres_admin_url: str, tmp_path: Path) -> None:
    out = tmp_path / "nightly.json"
    result = run_benchmark(
        "nightly.py",
        [
            "--events",
            "2000",
            "--repeat",
            "1",
            "--database-url",
            postgres_admin_url,
        ],
        out,
        timeout=100,
    )

    rows = result["generated"]["rows"]
    assert rows["pix_received"] == 2000
    assert rows["statement_entry"] == 2000
    report = result["report"]
    assert set(report["movements"]) >= MOVEMENTS
    assert set(report["charges"]) >= CHARGES
    assert set(report["payouts"]) >= PAYOUTS
    assert set(report["infractions"]) >= INFRACTIONS
    # The generated statement is a consistent running balance.
    assert report["balance_drift_cents"] == 0

    (run,) = result["runs"]
    assert run["peak_rss_mib"] > 0
    assert 0 < run["reconcile_day_seconds"] <= run["process_wall_seconds"]
    assert result["target"]["shipped_engine"] is True

    assert not database_left(postgres_admin_url, result["database"]), "database not dropped"
