"""A case raised by a run that could not read every source claims nothing: the
Exceptions list and the case's page say so, as ``pixrecon exceptions`` and ``pixrecon
export`` do, rather than show its action as if the day had been judged."""

from __future__ import annotations

import html
import json

from sqlalchemy import Engine, update

from reconcile.db import session_scope, table_of
from reconcile.models import ExceptionCase, ReconciliationItem, ReconciliationRun
from reconcile.timeutil import utcnow
from tests.conftest import RunningNode
from tests.dashboard.support import DAY, seed_case, sign_in

NOTICE = "could not read every source (incomplete): its verdicts claim nothing"


def _run_again_incomplete(engine: Engine, case_id: int) -> int:
    """A later run of the day that could not read every source, raising the same case."""
    with session_scope(engine) as session:
        run = ReconciliationRun(
            business_date=DAY,
            status="completed",
            finished_at=utcnow(),
            verdict="incomplete",
            exit_code=2,
            report=json.dumps({"date": DAY.isoformat(), "verdict": "incomplete"}),
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
            )
        )
        cases = table_of(ExceptionCase)
        session.execute(update(cases).where(cases.c.id == case_id).values(last_seen_run_id=run.id))
        return run.id


def test_the_cases_of_a_day_that_claims_nothing_say_so(
    engine: Engine, dashboard_node: RunningNode
) -> None:
    case_id = seed_case(engine)
    client = sign_in(dashboard_node.url)
    pages = ("/dashboard/exceptions", f"/dashboard/exceptions?date={DAY.isoformat()}")
    for path in (*pages, f"/dashboard/exceptions/{case_id}"):
        assert NOTICE not in html.unescape(client.get(path).text), path

    run_id = _run_again_incomplete(engine, case_id)
    for path in (*pages, f"/dashboard/exceptions/{case_id}"):
        page = html.unescape(client.get(path).text)
        assert f"The latest run of {DAY.strftime('%d/%m/%Y')} (run {run_id}) {NOTICE}" in page
        assert f"pixrecon reconcile --date {DAY.isoformat()}" in page
        assert f'data-unjudged="{DAY.isoformat()}"' in page
