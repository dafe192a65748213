"""Running a benchmark script for a moment, as its smoke test does: a process of its own,
its JSON result read back, and the scratch database it made checked gone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def run_benchmark(script: str, arguments: list[str], out: Path, timeout: float) -> dict[str, Any]:
    """``benchmarks/<script>`` with ``arguments``, its result written to ``out``; it must
    exit 0 (its output is the failure's message)."""
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *arguments, "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def database_left(admin_url: str, name: str) -> bool:
    """Whether the database a benchmark made is still there (it must drop it)."""
    admin = create_engine(admin_url)
    with admin.connect() as conn:
        count = conn.execute(
            text("SELECT count(*) FROM pg_database WHERE datname = :name"), {"name": name}
        ).scalar_one()
    admin.dispose()
    return bool(count)
