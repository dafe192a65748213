"""The confirmation benchmark at a tiny size: both ways settle every notified Pix, and the
day's fetch makes no look-up of its own for a Pix the listing showed. Times are never
asserted: docs/design.md §7's targets are benchmarks, not timed tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "confirm.py"


@pytest.mark.postgres
def test_confirm_benchmark_runs_briefly(postgres_admin_url: str, tmp_path: Path) -> None:
    out = tmp_path / "confirm.json"
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--pix",
            "60",
            "--page-size",
            "25",
            "--database-url",
            postgres_admin_url,
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    looked_up, fetched = json.loads(out.read_text())["results"]
    assert (looked_up["look_ups"], looked_up["confirmed"]) == (60, 60)
    assert (fetched["look_ups"], fetched["listing_pages"], fetched["confirmed"]) == (0, 3, 60)
