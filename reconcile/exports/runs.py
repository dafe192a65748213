"""Which run is a day's answer: its latest completed one (as ``v_latest_run`` says), with
its report and how many verdicts it kept — read in one transaction, so the count is the
run's own even while the worker reconciles the day again."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sqlalchemy import Engine, func, select

from reconcile.db import session_scope, table_of
from reconcile.exports.table import NotReconciled
from reconcile.formats import br_date
from reconcile.models import ReconciliationItem, ReconciliationRun

COMPLETED = "completed"


@dataclass(frozen=True)
class DayRun:
    day: date
    run_id: int
    started_at: datetime
    report: dict[str, Any]
    items: int
    """How many verdicts (``reconciliation_item`` rows) the run kept."""

    def notice(self) -> str | None:
        """The run could not read every source: its verdicts claim nothing, and whoever
        imports them must know it (``pixrecon reconcile`` exits 2 for such a run)."""
        if self.report.get("verdict") != "incomplete":
            return None
        day = self.day.isoformat()
        return (
            f"run {self.run_id}, the latest of {br_date(self.day)}, could not read every source"
            f" (incomplete): its verdicts claim nothing; run `pixrecon reconcile --date {day}`"
            " again once the provider answers"
        )


def latest_completed_run(engine: Engine, day: date, *, count_items: bool = False) -> DayRun:
    """The day's latest completed run; ``NotReconciled`` when it has none."""
    runs, items = table_of(ReconciliationRun), table_of(ReconciliationItem)
    with session_scope(engine) as session:
        found = session.execute(
            select(runs.c.id, runs.c.started_at, runs.c.report)
            .where(runs.c.business_date == day, runs.c.status == COMPLETED)
            .order_by(runs.c.id.desc())
            .limit(1)
        ).first()
        if found is None:
            raise NotReconciled(day.isoformat())
        count = 0
        if count_items:
            count = session.execute(
                select(func.count()).select_from(items).where(items.c.run_id == found.id)
            ).scalar_one()
    report: dict[str, Any] = json.loads(found.report) if found.report else {}
    return DayRun(
        day=day,
        run_id=int(found.id),
        started_at=found.started_at,
        report=report,
        items=int(count),
    )
