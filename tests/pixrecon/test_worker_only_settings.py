"""``PROMETHEUS_MULTIPROC_DIR`` belongs to ``pixrecon worker``: set for the receiver or the
demo (an environment shared by every pixrecon process, say), it stopped them at their
first metric with a bare FileNotFoundError. They now refuse it in one line, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_support import clean_env, run_pixrecon


@pytest.mark.parametrize("command", [("serve", "--port", "30998"), ("demo",)])
def test_the_workers_metrics_folder_is_refused_by_the_others(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    env = {
        **clean_env(database_url=f"sqlite:///{tmp_path / 'p.db'}", log_json="0"),
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "missing"),
    }
    done = run_pixrecon(*command, cwd=tmp_path, env=env, timeout=60)
    assert done.returncode == 2, done.stderr
    said = " ".join(done.stderr.split())
    assert "PROMETHEUS_MULTIPROC_DIR is set, but it is a setting of `pixrecon worker` only" in said
    assert len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr
