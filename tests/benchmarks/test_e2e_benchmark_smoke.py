"""The end-to-end benchmark at a tiny size, in both modes: the receiver (and, in production
mode, the worker processes) start as processes of their own, every phase completes, and
every acknowledged delivery is exactly one inbox item and one ``pix_received`` row.
Throughput, lag and memory are never asserted against their targets: docs/design.md §7's
targets are benchmarks, not timed tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.benchmarks.support import database_left, run_benchmark

TINY = ["--seconds", "2", "--rate", "100", "--connections", "4", "--open-connections", "4"]


def run_script(arguments: list[str], out: Path) -> dict[str, Any]:
    return run_benchmark("e2e.py", [*TINY, *arguments], out, timeout=120)


def check_load_phases(r: dict[str, Any]) -> None:
    once = r["exactly_once"]
    assert once["passed"], once
    assert once["acknowledged"] == once["inbox_items"] == once["pix_received"] > 0
    assert once["pending"] == once["failed"] == 0
    assert once["pix_amount_cents"] == once["inbox_amount_cents"] > 0

    s = r["sustained"]
    # The open loop sends exactly rate times seconds requests, all of them answered 2xx.
    assert s["load"]["requests"] == s["load"]["acknowledged"] == s["items"] == 200
    assert s["load"]["errors"] == 0
    assert s["acknowledged_per_second_in_window"] > 0
    assert s["processed_per_second_in_window"] > 0
    assert s["end_to_end_per_second"] > 0
    assert s["drained"]
    assert 0 <= s["lag_p50_s"] <= s["lag_p99_s"] <= s["lag_max_s"]

    sat = r["saturation"]
    assert sat["acknowledged_per_second"] > 0
    assert sat["processed_per_second_in_window"] > 0
    assert sat["drained"]
    assert r["receiver_peak_rss_mib"] > 0


@pytest.mark.postgres
@pytest.mark.redis
def test_e2e_benchmark_runs_briefly(
    postgres_admin_url: str, redis_url: str, tmp_path: Path
) -> None:
    # Two receivers (each its own process and port, the connections spread over them):
    # exactly once must hold across both.
    arguments = ["--backlog", "200", "--receivers", "2"]
    result = run_script(
        [*arguments, "--database-url", postgres_admin_url, "--broker-url", redis_url],
        tmp_path / "e2e.json",
    )
    r = result["results"]
    check_load_phases(r)
    assert len(r["receivers_peak_rss_mib"]) == 2
    assert all(peak > 0 for peak in r["receivers_peak_rss_mib"])

    drain = r["drain"]
    assert drain["ingest"]["load"]["acknowledged"] == drain["items"] == 200
    assert drain["pending_at_start"] == 200
    assert drain["drained"]
    assert drain["items_per_second"] > 0
    # Two runs of the worker (load phases, then the drain): a supervisor and two workers.
    assert len(r["worker_processes"]) == 2
    for tree in r["worker_processes"]:
        assert len(tree) == 3
        assert all(p["peak_rss_mib"] > 0 for p in tree)
    assert result["targets"]["worker_peak_rss_mib"] > 0

    assert not database_left(postgres_admin_url, result["database"]), "database not dropped"


def test_e2e_benchmark_single_node_runs_briefly(tmp_path: Path) -> None:
    result = run_script(["--single-node"], tmp_path / "e2e.json")
    r = result["results"]
    check_load_phases(r)
    assert "skipped" in r["drain"]
    assert r["worker_processes"] == []
    assert result["targets"]["drain_met"] is None
