"""``pixrecon reconcile`` never calls a day reconciled that nothing was read for: a day
that has not begun is refused, and a day with no statement line is quiet only when the
statement was read and a balance says where it stood."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from pixrecon.sandbox_wiring import sandbox_servers, sandbox_settings
from reconcile.timeutil import business_today
from sandbox.state import SandboxProvider
from tests.cli_support import run_pixrecon


@pytest.fixture
def env(tmp_path: Path, sqlite_template: Path) -> Iterator[dict[str, str]]:
    shutil.copy(sqlite_template, tmp_path / "quiet.db")
    with sandbox_servers(SandboxProvider(seed=41)) as urls:
        yield {
            **{k: v for k, v in os.environ.items() if not k.startswith("PIXRECON_")},
            "PIXRECON_DATABASE_URL": f"sqlite:///{tmp_path / 'quiet.db'}",
            "PIXRECON_PROVIDER_RETRY_SECONDS": "1",
            **sandbox_settings(urls),
        }


def _runs(tmp_path: Path) -> int:
    with sqlite3.connect(tmp_path / "quiet.db") as db:
        (n,) = db.execute("SELECT count(*) FROM reconciliation_run").fetchone()
    return int(n)


def test_a_day_not_begun_is_refused_and_leaves_nothing(env: dict[str, str], tmp_path: Path) -> None:
    tomorrow = (business_today() + timedelta(days=1)).isoformat()
    result = run_pixrecon("reconcile", "--date", tomorrow, env=env, cwd=tmp_path)
    assert result.returncode == 2, result.stdout
    assert f"--date {tomorrow} has not begun yet" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert _runs(tmp_path) == 0
    # Nor is its statement exported: it would state today's balance as that day's.
    out = tmp_path / "tomorrow.ofx"
    exported = run_pixrecon(
        "export",
        "--date",
        tomorrow,
        "--kind",
        "statement",
        "--format",
        "ofx",
        "-o",
        str(out),
        env=env,
        cwd=tmp_path,
    )
    assert exported.returncode == 2, exported.stdout
    assert f"{tomorrow} has not begun yet" in exported.stderr
    assert not out.exists()


def test_a_quiet_day_is_reconciled_only_once_its_statement_was_read(
    env: dict[str, str], tmp_path: Path
) -> None:
    yesterday = (business_today() - timedelta(days=1)).isoformat()
    unread = run_pixrecon(
        "reconcile", "--date", yesterday, "--no-poll", "--format", "json", env=env, cwd=tmp_path
    )
    assert unread.returncode == 2, unread.stderr
    report = json.loads(unread.stdout)
    assert report["verdict"] == "incomplete"
    assert "statement was not read" in " ".join(report["incomplete_because"])

    # Read, and nothing moved since: the balance read now is what it held then.
    read = run_pixrecon("reconcile", "--date", yesterday, "--format", "json", env=env, cwd=tmp_path)
    assert read.returncode == 0, read.stderr + read.stdout
    report = json.loads(read.stdout)
    assert report["verdict"] == "reconciled"
    assert report["bridge"]["opening_cents"] is not None
    assert report["bridge"]["opening_cents"] == report["bridge"]["closing_cents"]
    assert report["bridge"]["residual_cents"] == 0
