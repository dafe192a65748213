"""The sandbox flow as docs/scenarios.md writes it: its commands, run as a user runs them
(real processes, a fresh directory, a .env), reconcile the day the sandbox played."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from pixrecon.sandbox_wiring import SandboxUrls, env_lines, sandbox_settings
from reconcile.settings import Settings
from tests.cli_support import clean_env, run_pixrecon
from tests.conftest import free_port, wait_for

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "scenarios.md"
SETTINGS_HEADER = "# pixrecon settings for this sandbox (paste into .env, or export them)"

# The walk-through's commands, word for word; the test adds only the receiver's port.
DB_UPGRADE = "pixrecon db upgrade"
SERVE = "pixrecon serve &"
SANDBOX = (
    "pixrecon sandbox --scenario examples/scenarios/fees.json --port 0 --accounts-port 0 "
    "--env-file sandbox.env &"
)
POLL = "pixrecon poll --since 2026-03-03T00:00:00-03:00 --until 2026-03-04T00:00:00-03:00"
RECONCILE = "pixrecon reconcile --date 2026-03-03"


def walkthrough() -> list[str]:
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("### A day, command by command", 1)[1]
    return section.split("```sh\n", 1)[1].split("```", 1)[0].splitlines()


def dotenv_of(lines: list[str]) -> str:
    """The ``.env`` the walk-through writes with its here-document."""
    start = lines.index("cat > .env <<'END'") + 1
    return "\n".join(lines[start : lines.index("END", start)]) + "\n"


def command(line: str, *extra: str) -> list[str]:
    words = shlex.split(line.removesuffix(" &"))
    assert words[0] == "pixrecon"
    return [sys.executable, "-m", "pixrecon", *words[1:], *extra]


class Output:
    """A process's standard output, read as it comes (the sandbox never ends by itself)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self.lines.append(line.rstrip("\n"))

    def settings(self, count: int) -> list[str]:
        """The printed settings block: its header and ``count`` lines, once all came."""

        def printed() -> bool:
            return SETTINGS_HEADER in self.lines and len(self._after_header()) >= count

        wait_for(printed, timeout=20, interval=0.05)
        return [SETTINGS_HEADER, *self._after_header()[:count]]

    def _after_header(self) -> list[str]:
        return self.lines[self.lines.index(SETTINGS_HEADER) + 1 :]


@contextmanager
def running(
    args: list[str], cwd: Path, env: dict[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen[str], Output]]:
    process = subprocess.Popen(
        args,
        cwd=cwd,
        env=env if env is not None else clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        yield process, Output(process)
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(timeout=20)


def _listening(url: str) -> bool:
    try:
        httpx.get(url, timeout=1)
    except httpx.TransportError:
        return False
    return True


def test_the_documented_day_runs_as_written(tmp_path: Path) -> None:
    started = time.monotonic()
    lines = walkthrough()
    assert [line for line in lines if line.startswith("pixrecon ")] == [
        DB_UPGRADE,
        SERVE,
        SANDBOX,
        POLL,
        RECONCILE,
    ]
    # A fresh directory holding what the commands name: the scenario, and the .env.
    scenarios = tmp_path / "examples" / "scenarios"
    scenarios.mkdir(parents=True)
    shutil.copy(ROOT / "examples" / "scenarios" / "fees.json", scenarios)
    dotenv = tmp_path / ".env"
    dotenv.write_text(dotenv_of(lines), encoding="utf-8")
    assert "PIXRECON_WEBHOOK_SECRETS=" in dotenv.read_text(encoding="utf-8")

    upgraded = subprocess.run(
        command(DB_UPGRADE), cwd=tmp_path, env=clean_env(), capture_output=True, text=True
    )
    assert upgraded.returncode == 0, upgraded.stderr
    port = free_port()
    receiver = f"http://127.0.0.1:{port}"
    with running(command(SERVE, "--port", str(port)), tmp_path) as (serve, _):
        wait_for(lambda: _listening(receiver + "/healthz"), timeout=20, interval=0.1)
        webhooks = (
            "--qrcode-webhook-url",
            f"{receiver}/webhooks/qrcode",
            "--accounts-webhook-url",
            f"{receiver}/webhooks/accounts",
        )
        # In a terminal 80 columns wide.
        env = {**clean_env(), "COLUMNS": "80"}
        with running(command(SANDBOX, *webhooks), tmp_path, env) as (sandbox, output):
            env_file = tmp_path / "sandbox.env"
            wait_for(lambda: env_file.exists(), timeout=20, interval=0.05)
            printed = output.settings(9)
            played = next(i for i, line in enumerate(output.lines) if line.startswith("playing"))
            ground_truth = output.lines[played : output.lines.index(SETTINGS_HEADER)]
            written = env_file.read_text(encoding="utf-8")
            assert written == "\n".join(printed) + "\n"
            settings = dict(line.split("=", 1) for line in printed[1:])
            assert settings["PIXRECON_WEBHOOK_SECRETS"] == "change-me-to-a-long-random-secret"
            assert settings["PIXRECON_QRCODE_API_URL"] != "http://127.0.0.1:8900"  # port 0
            # cat sandbox.env >> .env
            dotenv.write_text(dotenv.read_text(encoding="utf-8") + written, encoding="utf-8")

            polled = run_pixrecon(*command(POLL)[3:], cwd=tmp_path, timeout=30)
            assert polled.returncode == 0, polled.stderr[-2000:]
            assert "new items" in polled.stdout
            reconciled = run_pixrecon(
                *command(RECONCILE, "--format", "json")[3:], cwd=tmp_path, timeout=30
            )
            assert reconciled.returncode == 0, reconciled.stdout[-2000:] + reconciled.stderr[-2000:]
            report = json.loads(reconciled.stdout)
            sandbox.terminate()
            assert sandbox.wait(timeout=20) == 0  # SIGTERM stops it as Ctrl-C does
        assert serve.poll() is None
    assert report["verdict"] == "reconciled"
    # The ground truth of fees.json (tests/sandbox/test_sandbox_fees.py).
    assert report["balance"]["opening_cents"] == 50_000
    assert report["balance"]["closing_cents"] == 36_703
    # The notifications came in, authenticated: three Pix with a txid, R$ 165.50.
    assert report["totals"]["credits"]["webhook"] == 16_550
    assert report["exceptions"] == []
    assert time.monotonic() - started < 45
    # The ground truth the sandbox printed for people: 80 columns, nothing cut short, the
    # day as 03/03/2026 and money as R$ 1.234,56.
    assert not [line for line in ground_truth if len(line) > 80 or "…" in line]
    summary = "\n".join(ground_truth)
    assert "fees — 03/03/2026 (America/Sao_Paulo)" in summary
    assert re.search(r"opening balance +│ R\$ 500,00 │", summary)
    assert re.search(r"closing balance +│ R\$ 367,03 │", summary)


def test_without_a_scenario_it_prints_settings_that_reach_it(tmp_path: Path) -> None:
    args = command("pixrecon sandbox --port 0 --accounts-port 0")
    with running(args, tmp_path) as (sandbox, output):
        printed = output.settings(7)
        settings = dict(line.split("=", 1) for line in printed[1:])
        assert not any("WEBHOOK" in name for name in settings)
        token = httpx.post(
            settings["PIXRECON_QRCODE_API_URL"] + "/oauth/token",
            data={"grant_type": "client_credentials"},
            auth=(settings["PIXRECON_QRCODE_CLIENT_ID"], settings["PIXRECON_QRCODE_CLIENT_SECRET"]),
        )
        assert token.status_code == 200, token.text
        accounts = httpx.post(
            settings["PIXRECON_ACCOUNTS_API_URL"] + "/oauth/token",
            data={"grant_type": "client_credentials"},
            auth=(
                settings["PIXRECON_ACCOUNTS_CLIENT_ID"],
                settings["PIXRECON_ACCOUNTS_CLIENT_SECRET"],
            ),
        )
        assert accounts.status_code == 200, accounts.text
        sandbox.terminate()
        assert sandbox.wait(timeout=20) == 0


def test_the_printed_names_are_the_settings_pixrecon_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    urls = SandboxUrls("http://127.0.0.1:1", "http://127.0.0.1:2")
    variables = sandbox_settings(urls, secret_header="X-Secret", secret="s3cret with space")
    for name in [name for name in os.environ if name.startswith("PIXRECON_")]:
        monkeypatch.delenv(name)
    lines = env_lines(variables)
    assert "PIXRECON_WEBHOOK_SECRETS='s3cret with space'" in lines
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    read = Settings(_env_file=None)
    assert read.qrcode_configured
    assert read.accounts_configured
    assert (read.webhook_secret_header, read.webhook_secrets) == ("X-Secret", ["s3cret with space"])
    with pytest.raises(ValueError, match="quote or a backslash"):
        env_lines({"PIXRECON_WEBHOOK_SECRETS": "it's"})


def test_a_secret_that_cannot_be_a_setting_is_refused(tmp_path: Path) -> None:
    scenario = str(ROOT / "examples" / "scenarios" / "fees.json")
    result = run_pixrecon(
        "sandbox", "--scenario", scenario, "--webhook-secret", "a,b", cwd=tmp_path
    )
    assert result.returncode == 2
    assert "cannot contain a comma" in result.stderr
