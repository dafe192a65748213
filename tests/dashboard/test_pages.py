"""The pages over a scenario day played end to end: the figures shown are the report's,
in Brazilian conventions; exceptions filter and sort; a case shows what decided it with
personal data masked; the CSV holds the day's open exceptions; recent days are charted."""

from __future__ import annotations

import csv
import html
import io
import json
import re
from typing import Any

from sqlalchemy import Engine, case, func, select
from sqlmodel import col

from reconcile.db import session_scope, table_of
from reconcile.formats import brl, duration
from reconcile.models import Confirmation, InboxItem, PixReceived
from reconcile.nightly import EXCEPTION_FIELDS
from reconcile.timeutil import business_day_bounds
from tests.dashboard.support import figures, judged, played_with_dashboard, sign_in
from tests.integration.scenario_day import PlayedDay


def _day_page_shows_the_report(client: Any, day: PlayedDay, report: dict[str, Any]) -> None:
    page = client.get(f"/dashboard/?date={day.day.isoformat()}")
    assert page.status_code == 200
    shown = figures(page.text)
    assert shown["date"] == day.day.strftime("%d/%m/%Y")
    bridge = report["bridge"]
    expected = {
        "bridge.opening": bridge["opening_cents"],
        "bridge.closing": bridge["closing_cents"],
        "bridge.residual": bridge["residual_cents"],
        "bridge.unexplained": bridge["unexplained_cents"],
        "balance.drift": report["balance_drift_cents"],
        "totals.fees.statement": report["totals"]["fees"]["statement"],
        "med.debited": report["med"]["debited_cents"],
        "med.at_risk": report["med"]["at_risk_cents"],
        **{
            f"bridge.{row['category']}.statement": row["statement_cents"]
            for row in bridge["categories"]
        },
        **{
            f"totals.{kind}.{source}": cents
            for kind in ("credits", "debits", "refunds")
            for source, cents in report["totals"][kind].items()
        },
    }
    assert {key: shown[key] for key in expected} == {k: brl(v) for k, v in expected.items()}
    for key in ("counts", "charges", "payouts"):
        # Duplicates are deliveries, not an outcome: shown with the deliveries.
        outcomes = {status: n for status, n in report[key].items() if status != "duplicate"}
        assert {
            status: int(shown[f"{key}.{status}"].replace(".", "")) for status in outcomes
        } == outcomes
    assert "counts.duplicate" not in shown
    assert {
        key: int(shown[f"deliveries.{key}"].replace(".", "")) for key in report["deliveries"]
    } == report["deliveries"]
    assert shown["open_exceptions"] == str(len(report["exceptions"]))
    assert report["verdict"].replace("_", " ") in page.text


def _exceptions_filter_and_sort(client: Any, report: dict[str, Any]) -> None:
    listed = client.get("/dashboard/exceptions")
    cases = [int(x) for x in _cases(listed.text)]
    assert sorted(cases) == sorted(e["case_id"] for e in report["exceptions"])
    charges = _cases(client.get("/dashboard/exceptions?subject=charge").text)
    assert sorted(int(x) for x in charges) == sorted(
        e["case_id"] for e in report["exceptions"] if e["subject"] == "charge"
    )
    by_amount = [int(x) for x in _cases(client.get("/dashboard/exceptions?sort=amount").text)]
    amounts = {
        e["case_id"]: e["actual_cents"] or e["expected_cents"] or 0 for e in report["exceptions"]
    }
    assert [amounts[c] for c in by_amount] == sorted(amounts.values(), reverse=True)
    status = report["exceptions"][0]["status"]
    only = _cases(client.get(f"/dashboard/exceptions?status={status}").text)
    assert {int(x) for x in only} == {
        e["case_id"] for e in report["exceptions"] if e["status"] == status
    }


def _cases(html: str) -> list[str]:
    return re.findall(r'data-case="(\d+)"', html)


def _case_shows_what_decided_it_masked(client: Any, engine: Engine, report: dict[str, Any]) -> None:
    forged = next(e for e in report["exceptions"] if e["status"] == "unconfirmed_webhook")
    page = client.get(f"/dashboard/exceptions/{forged['case_id']}")
    assert page.status_code == 200
    assert "decided the verdict" in page.text
    assert "/webhooks/qrcode" in page.text  # the delivery that brought it
    assert brl(forged["expected_cents"]) in page.text
    with session_scope(engine) as session:
        payload = session.execute(
            select(col(InboxItem.payload)).where(col(InboxItem.key) == f"pix:{forged['ref']}")
        ).scalar_one()
    payer = json.loads(payload)["pagador"]
    assert payer["cpf"] not in page.text
    assert payer["nome"] not in page.text
    for part in payer["nome"].split():
        assert part not in page.text
    assert payer["cpf"][-2:] in page.text  # masked, not dropped
    shown = figures(page.text)
    assert html.unescape(shown["case.action"]) == forged["action"]
    assert shown["case.lifecycle"].startswith(forged["lifecycle"])
    listed = html.unescape(client.get("/dashboard/exceptions").text)
    for exception in report["exceptions"]:
        assert exception["action"] in listed, "the list says what to do about each"


def _csv_holds_the_open_exceptions(client: Any, day: PlayedDay, report: dict[str, Any]) -> None:
    answer = client.get(f"/dashboard/exceptions.csv?date={day.day.isoformat()}")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/csv; charset=utf-8"
    assert "attachment" in answer.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(answer.content.decode("utf-8"))))
    assert list(rows[0]) == list(EXCEPTION_FIELDS)
    assert sorted(int(r["case_id"]) for r in rows) == sorted(
        e["case_id"] for e in report["exceptions"]
    )


def _recent_days_are_charted(
    client: Any, engine: Engine, day: PlayedDay, report: dict[str, Any]
) -> None:
    page = client.get(f"/dashboard/recent?until={day.day.isoformat()}&days=7")
    assert page.status_code == 200
    assert page.text.count("<svg") == 4
    # Per day: the money and the coverage of the day's latest run.
    row = figures(page.text.split(f'data-day="{day.day.isoformat()}"')[1].split("</tr>")[0])
    assert row["received"] == brl(report["totals"]["credits"]["api"])
    assert row["paid_out"] == brl(report["totals"]["debits"]["api"])
    assert row["refunded"] == brl(report["totals"]["refunds"]["api"])
    counts = report["counts"]
    # The scenario's forged Pix is no movement: neither announced nor polled.
    assert counts.get("unconfirmed_webhook", 0) > 0
    movements = sum(
        n for status, n in counts.items() if status not in ("duplicate", "unconfirmed_webhook")
    )
    webhook = movements - counts.get("missing_webhook", 0)
    assert row["webhook"] == str(webhook)
    assert row["poll_only"] == str(counts.get("missing_webhook", 0))
    assert row["coverage"] == f"{webhook / movements * 100:.1f}%".replace(".", ",")
    # Per hour of the day: the Pix received, as they stand in the database, but for those
    # the provider's API denies (the scenario's forged one): never received.
    start, end = business_day_bounds(day.day)
    pix, inbox = table_of(PixReceived), table_of(InboxItem)
    with session_scope(engine) as session:
        by_webhook, total = session.execute(
            select(func.sum(case((inbox.c.webhook_count > 0, 1), else_=0)), func.count())
            .select_from(pix.join(inbox, inbox.c.id == pix.c.inbox_item_id))
            .where(
                pix.c.horario >= start,
                pix.c.horario < end,
                pix.c.confirmation != Confirmation.UNCONFIRMED_WEBHOOK.value,
            )
        ).one()
        denied = session.execute(
            select(func.count()).where(
                pix.c.horario >= start,
                pix.c.horario < end,
                pix.c.confirmation == Confirmation.UNCONFIRMED_WEBHOOK.value,
            )
        ).scalar_one()
    assert denied >= 1
    assert total > by_webhook > 0
    hours = figures(page.text)
    assert sum(int(v) for k, v in hours.items() if k.endswith(".webhook")) == by_webhook
    assert sum(int(v) for k, v in hours.items() if k.endswith(".poll_only")) == total - by_webhook
    assert len([k for k in hours if k.endswith(".webhook")]) == 24
    # The slowest webhook lag, in a unit a person reads; a day delivered long after it
    # happened (the scenario plays a past day now) is said to be so.
    with session_scope(engine) as session:
        slowest = max(
            (row.webhook_at - row.horario).total_seconds()
            for row in session.execute(
                select(inbox.c.webhook_at, pix.c.horario)
                .select_from(pix.join(inbox, inbox.c.id == pix.c.inbox_item_id))
                .where(pix.c.horario >= start, pix.c.horario < end, inbox.c.webhook_at.isnot(None))
            )
        )
    lag_note = html.unescape(page.text.split('data-note="lag">')[1].split("</p>")[0])
    assert lag_note.endswith(f"the slowest, {duration(slowest)}.")
    assert ('data-note="late-day"' in page.text) == (slowest >= 86400)


def test_the_pages_show_a_played_day(engine: Engine) -> None:
    with played_with_dashboard(engine, "business-day.json") as day:
        report = judged(day).report
        assert report["exceptions"], "the scenario day is meant to have exceptions"
        client = sign_in(day.node.url)
        _day_page_shows_the_report(client, day, report)
        _exceptions_filter_and_sort(client, report)
        _case_shows_what_decided_it_masked(client, engine, report)
        _csv_holds_the_open_exceptions(client, day, report)
        _recent_days_are_charted(client, engine, day, report)
