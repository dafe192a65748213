"""An amount only a notification stated — a payout the provider does not know — is no
money that moved: the Exceptions list and the case's page label it "notified only", as
the command line does, where a paid charge's amount stays "actual"."""

from __future__ import annotations

import html
import json
import re

from sqlalchemy import Engine

from reconcile.db import session_scope
from reconcile.models import CaseState, ExceptionCase, ReconciliationItem, ReconciliationRun
from reconcile.timeutil import utcnow
from tests.conftest import RunningNode
from tests.dashboard.support import DAY, figures, seed_case, sign_in


def _forged_payout(engine: Engine) -> int:
    """The day's latest run, raising a payout nobody but a notification knows."""
    with session_scope(engine) as session:
        run = ReconciliationRun(
            business_date=DAY,
            status="completed",
            finished_at=utcnow(),
            verdict="breaks",
            exit_code=1,
            report=json.dumps({"date": DAY.isoformat(), "verdict": "breaks"}),
        )
        session.add(run)
        session.flush()
        assert run.id is not None
        for subject, ref, status, expected, actual in (
            ("payout", "forged-1", "unknown_to_provider", None, 500_000),
            ("charge", "cob:tx1", "overpaid", 4_500, 5_000),
        ):
            session.add(
                ReconciliationItem(
                    run_id=run.id,
                    subject=subject,
                    ref=ref,
                    status=status,
                    exception=True,
                    reason="notified, but the provider does not know this payout",
                    expected_cents=expected,
                    actual_cents=actual,
                    priority=2,
                )
            )
        case = ExceptionCase(
            business_date=DAY,
            subject="payout",
            ref="forged-1",
            status="unknown_to_provider",
            state=CaseState.OPEN.value,
            first_seen_run_id=run.id,
            last_seen_run_id=run.id,
        )
        session.add(case)
        session.flush()
        assert case.id is not None
        return case.id


def test_a_forged_payouts_amount_reads_notified_only(
    engine: Engine, dashboard_node: RunningNode
) -> None:
    paid = seed_case(engine)
    forged = _forged_payout(engine)
    client = sign_in(dashboard_node.url)
    listed = client.get("/dashboard/exceptions").text
    rows = {
        int(case_id): html.unescape(row)
        for case_id, row in re.findall(r'<tr data-case="(\d+)".*?>(.*?)</tr>', listed, re.S)
    }
    assert "notified only" in rows[forged], rows[forged]
    assert "notified only" not in rows[paid], rows[paid]

    page = client.get(f"/dashboard/exceptions/{forged}").text
    assert figures(page)["case.actual"] == "R$ 5.000,00"
    assert '<th scope="row">notified only</th>' in page
    assert '<th scope="row">actual</th>' not in page
    other = client.get(f"/dashboard/exceptions/{paid}").text
    assert '<th scope="row">actual</th>' in other
    assert "notified only" not in other
