"""The ingest benchmark for a moment: both servers start as processes of their own, the
load generator drives them, and every acknowledged delivery is one inbox row in
PostgreSQL. Throughput and latency are never asserted: docs/design.md §7's targets are
benchmarks, not timed tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.support import database_left, run_benchmark


@pytest.mark.postgres
@pytest.mark.redis
def test_ingest_benchmark_runs_briefly(
    postgres_admin_url: str, redis_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "ingest.json"
    result = run_benchmark(
        "ingest.py",
        [
            "--seconds",
            "0.5",
            "--connections",
            "4",
            "--rate",
            "40",
            "--open-connections",
            "4",
            "--database-url",
            postgres_admin_url,
            "--broker-url",
            redis_url,
        ],
        out,
        timeout=120,
    )
    r = result["results"]

    assert r["noop"]["requests"] > 0
    assert r["receiver"]["requests"] > 0
    # The open loop sends exactly rate times seconds requests.
    assert r["receiver_paced"]["requests"] == 20
    for phase in ("noop", "receiver", "receiver_paced"):
        assert set(r[phase]["statuses"]) == {"200"}, r[phase]
        assert r[phase]["errors"] == 0
    # One Pix per delivery: acknowledged deliveries, their rows and their items agree.
    assert r["acknowledged"] == r["deliveries"] == r["inbox_items"] > 0
    assert r["receiver_healthz"] == 200
    assert r["receiver_peak_rss_mib"] > 0
    assert result["targets"]["ratio"] > 0

    assert not database_left(postgres_admin_url, result["database"]), "database not dropped"
