"""A PostgreSQL server of the test's own, on a free port, so that stopping it disturbs
nothing else: the machine's binaries, a fresh data directory, trust authentication.
PostgreSQL refuses to run as root; when the tests do, the server runs as ``postgres``."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.conftest import free_port, service_missing


def _binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if found:
        return Path(found[-1]).parent
    pg_ctl = shutil.which("pg_ctl")
    return Path(pg_ctl).parent if pg_ctl else None


class PostgresInstance:
    def __init__(self) -> None:
        binaries = _binaries()
        if binaries is None:
            service_missing("PostgreSQL", "pg_ctl and initdb not found")
            raise RuntimeError("PostgreSQL binaries not found")
        self.bin = binaries
        self.port = free_port()
        # Outside the test's tmp_path: the postgres user must be able to reach it.
        self.directory = Path(tempfile.mkdtemp(prefix="pixrecon-pg-"))
        self.data = self.directory / "data"
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:
            shutil.chown(self.directory, "postgres", "postgres")

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if self._as_postgres else []
        subprocess.run([*prefix, *command], check=True, capture_output=True, timeout=120)

    def init(self) -> None:
        self._run(
            str(self.bin / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "--no-sync",
        )

    def start(self) -> None:
        options = f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c fsync=on"
        self._run(
            str(self.bin / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.directory / "log"),
            "-w",
            "start",
        )

    def stop(self) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)
