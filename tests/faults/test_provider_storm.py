"""A nightly run against a provider in trouble, with the real command: it rides out a storm
of 429 (honouring Retry-After) and 503 answers and a token revoked in the middle of its
pagination; a storm longer than its retry budget makes it exit 2 naming what it was
fetching, having concluded nothing; and a re-run once the provider answers is correct."""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from pixrecon.sandbox_wiring import sandbox_servers, sandbox_settings
from reconcile.timeutil import business_today
from sandbox.state import SandboxProvider
from tests.cli_support import run_pixrecon

PIX = 1100  # three pages of the QR code API's list, 500 a page


@pytest.fixture
def provider() -> SandboxProvider:
    provider = SandboxProvider(seed=14)
    for n in range(PIX):
        provider.receive_pix(Decimal("1.00") + Decimal(n) / 100)
    return provider


@pytest.fixture
def env(
    provider: SandboxProvider, tmp_path: Path, sqlite_template: Path
) -> Iterator[dict[str, str]]:
    database = tmp_path / "storm.db"
    shutil.copy(sqlite_template, database)
    with sandbox_servers(provider) as urls:
        yield {
            **{k: v for k, v in os.environ.items() if not k.startswith("PIXRECON_")},
            "PIXRECON_DATABASE_URL": f"sqlite:///{database}",
            **sandbox_settings(urls),
            # Seconds, not minutes, so that the test is short; the backoff capped to match.
            "PIXRECON_PROVIDER_RETRY_SECONDS": "20",
            "PIXRECON_PROVIDER_MAX_BACKOFF_SECONDS": "1",
        }


def _reconcile(env: dict[str, str], cwd: Path) -> tuple[int, dict[str, object], str]:
    result = run_pixrecon(
        "reconcile",
        "--date",
        business_today().isoformat(),
        "--format",
        "json",
        env=env,
        cwd=cwd,
        timeout=180,
    )
    report = json.loads(result.stdout) if result.stdout.strip() else {}
    return result.returncode, report, result.stderr


def test_a_nightly_run_rides_out_a_storm_and_a_revoked_token(
    provider: SandboxProvider, env: dict[str, str], tmp_path: Path
) -> None:
    provider.fail_next(5, status=429, retry_after=1)
    provider.accounts.fail_next(4, status=503)
    # Then slow pages; every token is revoked while the second page is on its way (the
    # sandbox checks the token after the delay, as a gateway then an API would).
    provider.delay_next(4, seconds=0.4)
    done = threading.Event()

    def revoke_mid_walk() -> None:
        while not done.is_set():
            if provider.request_count("GET /pix") >= 7:  # 5 refused, page 1, page 2
                provider.expire_tokens()
                return
            done.wait(0.01)

    revoker = threading.Thread(target=revoke_mid_walk)
    revoker.start()
    try:
        code, report, stderr = _reconcile(env, tmp_path)
    finally:
        done.set()
        revoker.join()
    assert code == 0, stderr
    assert report["verdict"] == "reconciled"
    counts = report["counts"]
    assert isinstance(counts, dict)
    assert counts.get("missing_webhook") == PIX  # every Pix, found by polling
    # The revoked token was renewed mid-walk (a second token), and the walk went on.
    assert provider.tokens.issued_count >= 2
    assert provider.request_count("GET /pix") >= 9


def test_a_storm_longer_than_the_budget_exits_2_naming_the_source_then_a_rerun_is_right(
    provider: SandboxProvider, env: dict[str, str], tmp_path: Path
) -> None:
    provider.fail_next(10_000, status=503)
    code, report, stderr = _reconcile({**env, "PIXRECON_PROVIDER_RETRY_SECONDS": "3"}, tmp_path)
    assert code == 2
    assert report == {}  # nothing concluded, nothing printed as if it were
    assert "while fetching Pix received" in stderr
    assert "PIXRECON_PROVIDER_RETRY_SECONDS" in stderr
    assert "Traceback" not in stderr

    provider.faults.clear()
    code, report, stderr = _reconcile(env, tmp_path)
    assert code == 0, stderr
    assert report["verdict"] == "reconciled"
    counts = report["counts"]
    assert isinstance(counts, dict)
    assert counts.get("missing_webhook") == PIX
