"""One exception case in a terminal (``pixrecon exceptions show``): what the dashboard's
case page says of it, read by ``reconcile.case_detail``, in the words and order the
exceptions list uses."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from pixrecon.report import (
    WholeAmounts,
    human_table,
    med_deadline_line,
)
from reconcile.formats import br_date, brl, sp_time
from reconcile.models import StatementEntry
from reconcile.priorities import URGENT_PRIORITY
from reconcile.timeutil import as_utc


def _iso(value: datetime | None) -> str | None:
    return as_utc(value).isoformat() if value is not None else None


def _statement(entry: StatementEntry | None) -> dict[str, Any] | None:
    if entry is None:
        return None
    return {
        "entry_id": entry.entry_id,
        "type": entry.type,
        "category": entry.category,
        "amount_cents": entry.amount_cents,
        "fee_cents": entry.fee_cents,
        "booked_at": _iso(entry.booked_at),
    }


def _cycle(cycle: dict[str, Any] | None) -> dict[str, Any] | None:
    if cycle is None:
        return None
    return {
        **cycle,
        "due": cycle["due"].isoformat(),
        "stated_at": _iso(cycle["stated_at"]),
    }


def shown_case(found: dict[str, Any], events: list[dict[str, Any]]) -> dict[str, Any]:
    """The case as ``--format json`` gives it: the exceptions list's fields (as of
    today), then what decided it and its history."""
    case = found["case"]
    described = found["described"] or {}
    run = found["run"]
    return {
        "id": case.id,
        **described,
        "case_id": case.id,
        "date": case.business_date.isoformat(),
        "subject": case.subject,
        "ref": case.ref,
        "status": case.status,
        "state": case.state,
        "med_deadline_passed": found["med_deadline_passed"],
        "run": {"id": run.id, "verdict": run.verdict} if run is not None else None,
        "raised_by_latest_run": found["verdict"] is not None,
        "decided_by": {
            "statement_line": _statement(found["statement"]),
            "cycle": _cycle(found["cycle"]),
            "inbox_items": [
                {
                    key: item[key]
                    for key in (
                        "id",
                        "key",
                        "kind",
                        "status",
                        "source",
                        "received_at",
                        "webhook_count",
                        "poll_count",
                        "duplicates",
                        "decided",
                        "payload",
                    )
                }
                for item in found["items"]
            ],
        },
        "history": events,
    }


def _payer(case: dict[str, Any]) -> str:
    return " ".join(p for p in (case.get("payer_document"), case.get("payer_name")) if p)


def _facts(case: dict[str, Any], today: date) -> list[tuple[str, str]]:
    urgent = " (urgent)" if case.get("priority") == URGENT_PRIORITY else ""
    facts = [
        ("day", br_date(case["date"])),
        ("subject", case["subject"]),
        ("ref", escape(case["ref"])),
        ("status", case["status"]),
        ("state", case["state"]),
    ]
    if case.get("lifecycle"):
        days = case.get("age_days") or 0
        since = f", first on {br_date(case['first_seen'])}" if case.get("first_seen") else ""
        facts.append(("seen", f"{case['lifecycle']}{since}" + (f" ({days} d)" if days else "")))
    if case.get("priority") is not None:
        facts.append(("priority", f"{case['priority']}{urgent}"))
    facts += [
        ("expected", brl(case.get("expected_cents"))),
        ("actual", brl(case.get("actual_cents"))),
        ("why", escape(case.get("reason") or "")),
        ("what to do", f"[bold]{escape(case.get('action') or '')}[/]"),
    ]
    if case.get("refund_by"):
        passed = today > date.fromisoformat(str(case["refund_by"]))
        facts.append(("refund by", f"{br_date(case['refund_by'])}{' — passed' if passed else ''}"))
    if case.get("med_deadline_at"):
        line = med_deadline_line(case["med_deadline_at"], today)
        facts.append(("MED deadline", line.removeprefix("MED analysis deadline ")))
    for label, key in (("txid", "txid"), ("endToEndId", "end_to_end_id")):
        if case.get(key):
            facts.append((label, escape(case[key])))
    if _payer(case):
        facts.append(("payer", escape(_payer(case))))
    if case.get("payer_request"):
        facts.append(("payer information", escape(case["payer_request"])))
    if case.get("note"):
        facts.append(("note", escape(case["note"])))
    if not case["raised_by_latest_run"]:
        facts.append(("verdict", "the day's latest run no longer raises this case"))
    return facts


def print_case(console: Console, case: dict[str, Any], *, today: date) -> None:
    facts = human_table("", "", title=f"Case {case['case_id']}")
    # Label and value: a header row would say nothing.
    facts.show_header = False
    for label, value in _facts(case, today):
        facts.add_row(label, WholeAmounts(value))
    console.print(facts)
    decided = case["decided_by"]
    entry = decided["statement_line"]
    if entry is not None:
        line = human_table("line", "type", "amount", "fee", "booked", title="Statement line")
        line.add_row(
            escape(entry["entry_id"]),
            escape(f"{entry['type']}" + (f", {entry['category']}" if entry["category"] else "")),
            brl(entry["amount_cents"]),
            brl(entry["fee_cents"]) if entry["fee_cents"] else "",
            sp_time(entry["booked_at"]),
        )
        console.print(line)
    cycle = decided["cycle"]
    if cycle is not None:
        stated = f", {cycle['stated']} as the provider's API states it" if cycle["stated"] else ""
        console.print(
            WholeAmounts(
                f"The cycle no recurring charge was created for: recurrence "
                f"{escape(cycle['id_rec'])}{stated}; {cycle['periodicity'] or ''} cycle due "
                f"{br_date(cycle['due'])} of {brl(cycle['amount_cents'])}: nothing will be "
                "debited for it"
            )
        )
    items = decided["inbox_items"]
    if items:
        # One fact a line in the narrow columns, so that at 80 columns the key, which a
        # person searches for as a whole, keeps the width it needs.
        table = human_table("item", "key", "first from", "deliveries", title="Notifications")
        for item in items:
            table.add_row(
                f"#{item['id']}\n{item['status']}" + ("\ndecided it" if item["decided"] else ""),
                escape(item["key"]),
                f"{item['source']}\n{sp_time(item['received_at'])}",
                f"{item['webhook_count']} webhook\n{item['duplicates']} repeated\n"
                f"{item['poll_count']} poll",
            )
        console.print(table)
    elif entry is None and cycle is None:
        console.print("No notification carries this reference.")
    history = case["history"]
    if not history:
        console.print(f"Nobody has acted on case {case['case_id']} yet.")
        return
    console.print(history_table(history, "History"))


def history_table(events: list[dict[str, Any]], title: str) -> Table:
    """Who did what to a case, as ``pixrecon exceptions history`` prints it."""
    table = human_table("when (São Paulo)", "who", "did", "was", "note", title=title)
    for event in events:
        table.add_row(
            sp_time(event["at"]),
            escape(event["actor"] or ""),
            event["action"] or "",
            event["previous_state"] or "",
            escape(event["note"] or ""),
        )
    return table
