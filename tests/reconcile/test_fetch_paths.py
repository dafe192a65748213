"""One way to fetch from the provider: the worker's periodic polls, ``pixrecon poll`` and
``pixrecon reconcile`` ask the provider for the same things, because all three go through
``reconcile.polling.day``. Measured where it matters — the requests the (sandbox) provider
receives — so a path that skipped a step, or added one of its own, would show."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from pixrecon.node import Node
from pixrecon.sandbox_wiring import SandboxUrls, sandbox_servers
from reconcile.db import session_scope
from reconcile.models import BalanceSnapshot
from reconcile.timeutil import BUSINESS_TZ, utcnow
from sandbox.state import SandboxProvider
from tests.cli_support import clean_env, run_pixrecon
from tests.conftest import make_settings

# Asked for once per fetch whatever the path; token requests depend on token lifetimes.
NOT_COUNTED = {"POST /oauth/token"}


@pytest.fixture
def provider() -> SandboxProvider:
    provider = SandboxProvider(seed=11)
    provider.receive_pix(Decimal("12.34"))
    provider.create_cob(Decimal("50.00"), txid="fetchpaths000000000000000001")
    return provider


@pytest.fixture
def urls(provider: SandboxProvider) -> Iterator[SandboxUrls]:
    with sandbox_servers(provider) as urls:
        yield urls


def _asked(provider: SandboxProvider, action: Callable[[], object]) -> set[str]:
    """The routes the provider was asked for while ``action`` ran."""

    def seen() -> Counter[str]:
        return provider.requests_seen() + provider.accounts.requests_seen()

    before = seen()
    action()
    return {route for route in seen() - before if route not in NOT_COUNTED}


def _cli(*args: str, urls: SandboxUrls, database_url: str, cwd: Path) -> None:
    env = clean_env(**urls.fields(), database_url=database_url)
    result = run_pixrecon(*args, cwd=cwd, env=env)
    assert result.returncode in (0, 1), result.stderr[-2000:]


def _balances(engine: Engine) -> int:
    with session_scope(engine) as session:
        return int(session.execute(select(func.count()).select_from(BalanceSnapshot)).scalar_one())


def test_worker_poll_cli_poll_and_nightly_fetch_the_same_things(
    engine: Engine, provider: SandboxProvider, urls: SandboxUrls, tmp_path: Path
) -> None:
    database_url = engine.url.render_as_string(hide_password=False)
    settings = urls.configure(make_settings(database_url))
    with Node(settings, engine) as node:
        jobs = node.runtime.jobs

        def worker_polls() -> None:
            assert jobs.poll_qrcode()
            assert jobs.poll_accounts()

        by_worker = _asked(provider, worker_polls)
    by_poll = _asked(
        provider, lambda: _cli("poll", urls=urls, database_url=database_url, cwd=tmp_path)
    )
    today = utcnow().astimezone(BUSINESS_TZ).date()
    balances_before = _balances(engine)
    by_nightly = _asked(
        provider,
        lambda: _cli(
            "reconcile",
            "--date",
            today.isoformat(),
            urls=urls,
            database_url=database_url,
            cwd=tmp_path,
        ),
    )

    # Every list of both API families, the balance included, by all three paths.
    assert {"GET /pix", "GET /cob", "GET /cobv", "GET /cobr", "GET /accounts/balances"} <= (
        by_worker
    )
    assert by_poll == by_worker
    assert by_nightly == by_worker
    # The nightly run keeps the balance it read, like the worker's poll does.
    assert _balances(engine) == balances_before + 1
