"""Rendering a day's reconciliation for people (a terminal) and for files (the
exceptions as CSV or JSON): ``pixrecon reconcile`` and the demo print the same report."""

from __future__ import annotations

import csv
import json
from enum import StrEnum
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from reconcile.formats import br_date, brl, sp_time
from reconcile.nightly import EXCEPTION_FIELDS, NightlyResult


class ExportFormat(StrEnum):
    csv = "csv"
    json = "json"


VERDICT_WORDS = {
    "reconciled": "[bold green]reconciled[/]: every source was read and agrees",
    "reconciled_with_pending": (
        "[bold yellow]reconciled with pending items[/]: everything agrees except items "
        "still inside their grace period (listed with the time each becomes a break)"
    ),
    "breaks": "[bold red]breaks[/]: exceptions remain (below)",
    "incomplete": "[bold red]incomplete[/]: a source could not be read, nothing is claimed",
}


def _counts(report: dict[str, Any]) -> list[Table]:
    tables = []
    for title, key in (
        ("movements", "counts"),
        ("charges", "charges"),
        ("payouts", "payouts"),
        ("infractions", "infractions"),
        ("statement lines", "statement"),
    ):
        counts = {k: v for k, v in report.get(key, {}).items() if k != "duplicate"}
        if counts:
            table = Table(title, "n")
            for name, n in sorted(counts.items()):
                table.add_row(name, str(n))
            tables.append(table)
    return tables


def _bridge(report: dict[str, Any]) -> Table:
    bridge = report["bridge"]
    table = Table(
        "",
        "webhook",
        "API",
        "statement",
        "carried",
        "difference",
        title="From the opening to the closing balance",
    )
    table.add_row("opening balance", "", "", brl(bridge["opening_cents"]), "", "")
    for row in bridge["categories"]:
        sign = {1: "+ ", -1: "- ", 0: "? "}[row["sign"]]
        carried = row["carried_in_cents"] - row["carried_out_cents"]
        table.add_row(
            sign + row["label"],
            brl(row["webhook_cents"]),
            brl(row["api_cents"]),
            brl(row["statement_cents"]),
            brl(carried) if carried else "",
            brl(row["difference_cents"]) if row["difference_cents"] else "",
        )
    table.add_row("closing balance", "", "", brl(bridge["closing_cents"]), "", "")
    table.add_row("[bold]unexplained residual[/]", "", "", brl(bridge["residual_cents"]), "", "")
    return table


def _med(med: dict[str, Any]) -> Table:
    table = Table(
        "case",
        "state",
        "amount",
        "blocked",
        "debited",
        "deadline",
        title=(
            f"MED: {med['open_cases']} open, {brl(med['at_risk_cents'])} at risk "
            f"({brl(med['blocked_cents'])} blocked); {brl(med['debited_cents'])} debited "
            "by cases closed this day"
        ),
    )
    for case in med["cases"]:
        table.add_row(
            case["case_id"],
            case["state"],
            brl(case["amount_cents"]),
            brl(case["blocked_cents"]),
            brl(case["debited_cents"]),
            sp_time(case["deadline_at"]) if case["state"] == "open" else "",
        )
    return table


def print_report(result: NightlyResult, console: Console) -> None:
    report = result.report
    console.print(
        f"[bold]Reconciliation of {br_date(report['date'])}[/] (run {result.run_id}, "
        f"as of {sp_time(report['as_of'])} São Paulo time)"
    )
    console.print(*_counts(report))
    console.print(_bridge(report))
    med = report["med"]
    if med["cases"]:
        console.print(_med(med))
    duplicates = report["counts"].get("duplicate", 0)
    if duplicates:
        console.print(f"Deliveries: {duplicates} duplicate webhooks counted (no effect).")
    if report["pending"]:
        table = Table("subject", "ref", "amount", "becomes a break at", "why", title="Pending")
        for item in report["pending"]:
            table.add_row(
                item["subject"],
                item["ref"],
                brl(item["amount_cents"]),
                sp_time(item["due_at"]) if item["due_at"] else "when the provider answers",
                item["reason"],
            )
        console.print(table)
    for direction, title in (
        ("carried_in", "Carried in from the day before"),
        ("carried_out", "Carried out to the next day"),
    ):
        if report[direction]:
            table = Table("subject", "ref", "amount", title=title)
            for item in report[direction]:
                table.add_row(item["subject"], item["ref"], brl(item["amount_cents"]))
            console.print(table)
    if report["exceptions"]:
        table = Table("case", "what", "status", "expected", "actual", "why", title="Exceptions")
        for case in report["exceptions"]:
            why = f"{case['reason']}\n[bold]→ {case['action']}[/]"
            table.add_row(
                f"{case['case_id']}" + (" !" if case.get("priority") == 1 else ""),
                f"{case['subject']} {case['ref']}",
                f"{case['status']} ({case['state']})",
                brl(case["expected_cents"]),
                brl(case["actual_cents"]),
                why,
            )
        console.print(table)
    for reason in report["incomplete_because"]:
        console.print(f"[red]not read:[/] {reason}")
    console.print(f"{VERDICT_WORDS[report['verdict']]} (exit code {result.exit_code})")


def export_exceptions(result: NightlyResult, kind: ExportFormat, path: Path) -> None:
    cases = result.report["exceptions"]
    if kind is ExportFormat.json:
        path.write_text(json.dumps(cases, indent=2) + "\n", encoding="utf-8")
        return
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=EXCEPTION_FIELDS)
        writer.writeheader()
        writer.writerows(cases)
