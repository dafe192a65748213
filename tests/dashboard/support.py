"""Signing in to the dashboard of a running node, and a day with one exception case."""

from __future__ import annotations

import json
import re
from contextlib import AbstractContextManager
from datetime import date, timedelta
from typing import Any

import httpx
from sqlalchemy import Engine

from dashboard.passwords import hash_password
from reconcile.db import session_scope
from reconcile.models import CaseState, ExceptionCase, ReconciliationItem, ReconciliationRun
from reconcile.nightly import NightlyResult
from reconcile.timeutil import utcnow
from tests.integration.scenario_day import PlayedDay, played

PASSWORD = "correct horse battery staple"
# Hashed once: scrypt is slow on purpose.
USERS = [f"alice:{hash_password(PASSWORD)}", f"bob:{hash_password('another one')}"]
SECRET = "s" * 48
DAY = date(2026, 11, 22)


def dashboard_settings() -> dict[str, object]:
    """Settings overrides that switch the dashboard on (plain HTTP on loopback)."""
    return {
        "dashboard_users": USERS,
        "dashboard_secret": SECRET,
        "dashboard_cookie_secure": False,
    }


def played_with_dashboard(engine: Engine, scenario_file: str) -> AbstractContextManager[PlayedDay]:
    """A scenario day played against a node whose dashboard is switched on."""
    return played(
        engine,
        scenario_file,
        dashboard_users=USERS,
        dashboard_secret=SECRET,
        dashboard_cookie_secure=False,
    )


def figure(page: Any, key: str) -> str:
    """A figure of a dashboard page in a browser, by its ``data-figure`` name."""
    # The DOM's text, not the rendered one: CSS shows states in capitals.
    text: str = page.locator(f'[data-figure="{key}"]').first.text_content()
    return text.strip()


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found is not None, html[:500]
    return found.group(1)


def sign_in(url: str, name: str = "alice", password: str = PASSWORD) -> httpx.Client:
    client = httpx.Client(base_url=url, follow_redirects=False, timeout=10)
    token = csrf_of(client.get("/dashboard/login").text)
    answer = client.post(
        "/dashboard/login",
        data={"csrf": token, "name": name, "password": password, "next": "/dashboard/"},
    )
    assert answer.status_code == 303, answer.text
    return client


def judged(day: PlayedDay) -> NightlyResult:
    """The played day, polled, confirmed and reconciled as the worker's jobs would."""
    day.node.wait_processed(timeout=20)
    jobs = day.node.node.runtime.jobs
    for job in (jobs.poll_qrcode, jobs.poll_accounts):
        # The scenario's API faults may fail a poll: the scheduler would run it again.
        assert any(job() for _ in range(10)), job
    day.node.wait_processed(timeout=20)
    assert any(jobs.confirm() for _ in range(10))
    return day.reconcile()


def seed_case(engine: Engine, day: date = DAY) -> int:
    """A completed run of ``day`` that raised one open case (an overpaid charge)."""
    report = {
        "date": day.isoformat(),
        "verdict": "breaks",
        "open_exceptions": 1,
    }
    with session_scope(engine) as session:
        run = ReconciliationRun(
            business_date=day,
            status="completed",
            finished_at=utcnow(),
            verdict="breaks",
            exit_code=1,
        )
        session.add(run)
        session.flush()
        assert run.id is not None
        session.add(
            ReconciliationItem(
                run_id=run.id,
                subject="charge",
                ref="cob:tx1",
                status="overpaid",
                exception=True,
                reason="paid more than was due",
                expected_cents=4500,
                actual_cents=5000,
                priority=2,
                refund_by=day + timedelta(days=90),
            )
        )
        case = ExceptionCase(
            business_date=day,
            subject="charge",
            ref="cob:tx1",
            status="overpaid",
            state=CaseState.OPEN.value,
            first_seen_run_id=run.id,
            last_seen_run_id=run.id,
        )
        session.add(case)
        session.flush()
        assert case.id is not None
        run.report = json.dumps(report)
        return case.id


def figures(html: str) -> dict[str, str]:
    """Every figure a page marks with ``data-figure``, as shown."""
    return dict(re.findall(r'data-figure="([^"]+)"[^>]*>([^<]*)<', html))
