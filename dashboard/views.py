"""What each page shows, read in one transaction and shaped for its template."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from sqlmodel import Session

from dashboard import charts
from dashboard.queries import (
    SORTS,
    STATE_FILTERS,
    CaseQuery,
    Hour,
    Reports,
    case_facets,
    hourly_pix,
    latest_runs,
    list_cases,
    reconciled_days,
    remaining_case_states,
    urgent_med_cases,
)
from reconcile.actions import suggested_action
from reconcile.case_detail import Run, case_detail, latest_run
from reconcile.cases import add_lifecycle
from reconcile.formats import brl, duration_unit
from reconcile.queries import webhook_coverage
from reconcile.references import add_references, med_terms
from reconcile.timeutil import BUSINESS_TZ, business_day_bounds, business_today, utcnow


def today() -> date:
    return business_today()


def default_day(session: Session) -> date:
    days = reconciled_days(session, limit=1)
    return days[0] if days else today() - timedelta(days=1)


# --- the day ---------------------------------------------------------------------------


def day_page(session: Session, reports: Reports, day: date) -> dict[str, Any]:
    run = latest_run(session, day)
    report = reports.get(session, run.id) if run is not None else None
    days = reconciled_days(session)
    earlier = [d for d in days if d < day]
    later = [d for d in days if d > day]
    context: dict[str, Any] = {
        "day": day,
        "begun": day <= today(),
        "run": run,
        "report": report,
        "days": days,
        "previous_day": earlier[0] if earlier else None,
        "next_day": later[-1] if later else None,
    }
    if report is not None:
        # Live: people act on cases after the run that raised them.
        context["open_exceptions"] = len(remaining_case_states(session, day))
        # Judged as of today, as the exceptions list is: a case left open nears its
        # deadline after the run that listed it.
        context["urgent_med"] = (
            urgent_med_cases(session, day, today()) if report.get("med") else set()
        )
    return context


# --- exceptions ------------------------------------------------------------------------


def exceptions_page(session: Session, query: CaseQuery, page_size: int) -> dict[str, Any]:
    today = business_today()
    rows, total = list_cases(session, query, page_size, today)
    terms = med_terms(session, rows)
    for row in rows:
        med = terms.get(row["ref"]) if row["subject"] == "infraction" else None
        row["date"] = row["business_date"].isoformat()
        row["action"] = suggested_action(
            row["subject"],
            row["status"],
            row["expected_cents"],
            row["actual_cents"],
            row["refund_by"],
            ref=row["ref"],
            today=today,
            deadline=med.deadline_at if med is not None else None,
            reason=row["reason"],
            blocked=med.blocked_cents if med is not None else None,
        )
    # Ages count to today here: this is the work queue, not a day's report.
    add_lifecycle(session, rows, as_of=today)
    add_references(session, rows)
    pages = max(1, -(-total // page_size))
    return {
        "unjudged": unjudged_runs(session, {row["business_date"] for row in rows}),
        "query": query,
        # Offered for download only when there is a run to export (else the link answers
        # 404, which a browser's download swallows without a word).
        "day_reconciled": query.day is not None and latest_run(session, query.day) is not None,
        "rows": rows,
        "total": total,
        "pages": pages,
        "facets": case_facets(session, query),
        "states": list(STATE_FILTERS),
        "sorts": SORTS,
        "now": utcnow(),
    }


def unjudged_runs(session: Session, days: set[date]) -> list[Run]:
    """The latest runs, of these days, that could not read every source: the cases they
    raised claim nothing until the day is reconciled again, as ``pixrecon exceptions``
    and ``pixrecon export`` warn."""
    found = (latest_run(session, day) for day in sorted(days))
    return [run for run in found if run is not None and run.verdict == "incomplete"]


def case_page(session: Session, case_id: int) -> dict[str, Any] | None:
    # ``pixrecon exceptions show`` reads the same: the page and the command agree.
    return case_detail(session, case_id)


# --- recent days -----------------------------------------------------------------------


def _hour_label(hour: int) -> str:
    return datetime.fromtimestamp(hour * 3600, BUSINESS_TZ).strftime("%Hh")


def recent_page(
    session: Session, reports: Reports, last: date, days: int, hours_of: date
) -> dict[str, Any]:
    first = last - timedelta(days=days - 1)
    runs = latest_runs(session, first, last)
    span = [first + timedelta(days=i) for i in range(days)]
    money: list[dict[str, Any]] = []
    coverage: list[dict[str, Any]] = []
    for day in span:
        run = runs.get(day)
        report = reports.get(session, run.id) if run is not None else {}
        totals = report.get("totals", {})
        money.append(
            {
                "day": day,
                "verdict": run.verdict if run is not None else None,
                "received": totals.get("credits", {}).get("api"),
                "paid_out": totals.get("debits", {}).get("api"),
                "refunded": totals.get("refunds", {}).get("api"),
            }
        )
        coverage.append({"day": day, **webhook_coverage(report.get("counts"))})
    # The hours of one day are read live: one grouped statement over that day's Pix.
    hour_start, hour_end = business_day_bounds(hours_of)
    hours = hourly_pix(session, hour_start, hour_end)
    first_hour = int(hour_start.timestamp()) // 3600
    day_hours = [
        hours.get(h) or Hour(h) for h in range(first_hour, int(hour_end.timestamp()) // 3600)
    ]
    return {
        "first": first,
        "last": last,
        "days": days,
        "hours_of": hours_of,
        "money": money,
        "coverage": coverage,
        "hours": [
            {
                "label": _hour_label(h.hour),
                "webhook": h.webhook,
                "poll_only": h.poll_only,
                "lag_avg": h.lag_avg,
                "lag_max": h.lag_max,
            }
            for h in day_hours
        ],
        "charts": _recent_charts(money, coverage, day_hours),
        "slowest_lag": max((h.lag_max for h in day_hours if h.lag_max is not None), default=None),
    }


def _in_unit(values: list[float | None], unit: float) -> list[float | None]:
    return [v / unit if v is not None else None for v in values]


def _recent_charts(
    money: list[dict[str, Any]], coverage: list[dict[str, Any]], hours: list[Any]
) -> dict[str, Any]:
    labels = [row["day"].strftime("%d/%m") for row in money]
    hour_labels = [_hour_label(h.hour) for h in hours]
    unit, unit_name = duration_unit(max((h.lag_max or 0.0 for h in hours), default=0.0))

    def duration(value: float) -> str:
        shown = f"{value:.0f}" if value == int(value) else f"{value:.1f}".replace(".", ",")
        return f"{shown} {unit_name}"

    def cents(value: float) -> str:
        return brl(round(value))

    def count(value: float) -> str:
        return f"{value:,.0f}".replace(",", ".")

    return {
        "money": charts.bar_chart(
            "Received, paid out and refunded per day (confirmed by the provider's API)",
            labels,
            [
                charts.Series("received", [r["received"] for r in money], "s1"),
                charts.Series("paid out", [r["paid_out"] for r in money], "s2"),
                charts.Series("refunded", [r["refunded"] for r in money], "s3"),
            ],
            cents,
        ),
        "coverage": charts.bar_chart(
            "Pix and refunds per day: announced by webhook, or found only by polling",
            labels,
            [
                charts.Series("by webhook", [r["webhook"] for r in coverage], "s1"),
                charts.Series("only by polling", [r["poll_only"] for r in coverage], "s3"),
            ],
            count,
            stacked=True,
            integer=True,
        ),
        "volume": charts.bar_chart(
            "Pix received per hour (São Paulo time)",
            hour_labels,
            [
                charts.Series("by webhook", [h.webhook for h in hours], "s1"),
                charts.Series("only by polling", [h.poll_only for h in hours], "s3"),
            ],
            count,
            stacked=True,
            integer=True,
        ),
        "lag": charts.line_chart(
            "Webhook lag per hour: from the Pix to its webhook",
            hour_labels,
            [
                charts.Series("average", _in_unit([h.lag_avg for h in hours], unit), "s1"),
                charts.Series("slowest", _in_unit([h.lag_max for h in hours], unit), "s2"),
            ],
            duration,
        ),
    }
