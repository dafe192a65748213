"""Running the console script as a user does: a process of its own, an environment free
of the developer's own ``PIXRECON_*`` settings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def clean_env(**variables: str) -> dict[str, str]:
    """The environment without any ``PIXRECON_*`` variable, plus ``variables`` (named
    without the prefix: ``database_url="sqlite://"``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIXRECON_")}
    # A provider that fails in a test fails fast (the default rides out minutes).
    env["PIXRECON_PROVIDER_RETRY_SECONDS"] = "1"
    env.update({f"PIXRECON_{name.upper()}": value for name, value in variables.items()})
    return env


def run_pixrecon(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pixrecon", *args],
        cwd=cwd,
        env=env if env is not None else clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def table_row(text: str, label: str) -> list[str]:
    """The cells of the row of a rich table in ``text`` whose first cell is ``label``."""
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split("│")[1:-1]]
        if cells and cells[0] == label:
            return cells
    raise AssertionError(f"no row {label!r} in:\n{text[-3000:]}")
