"""Rendering a day's reconciliation for people (a terminal) and for files (the
exceptions as CSV or JSON): ``pixrecon reconcile`` and the demo print the same report."""

from __future__ import annotations

import csv
import json
from enum import StrEnum
from pathlib import Path

from rich.console import Console
from rich.table import Table

from reconcile.money import from_cents
from reconcile.nightly import NightlyResult


class ExportFormat(StrEnum):
    csv = "csv"
    json = "json"


EXPORT_COLUMNS = (
    "case_id",
    "subject",
    "ref",
    "status",
    "state",
    "reason",
    "expected_cents",
    "actual_cents",
)


def _money(cents: object) -> str:
    return f"R$ {from_cents(int(cents))}" if isinstance(cents, int) else "—"


def print_report(result: NightlyResult, console: Console) -> None:
    report = result.report
    console.print(f"[bold]Reconciliation of {report['date']}[/] (run {result.run_id})")
    tables = []
    for title, key in (
        ("movements", "counts"),
        ("charges", "charges"),
        ("payouts", "payouts"),
        ("infractions", "infractions"),
    ):
        if report[key]:
            table = Table(title, "n")
            for name, n in sorted(report[key].items()):
                table.add_row(name, str(n))
            tables.append(table)
    console.print(*tables)
    money = Table("money", "webhook", "poll / API", "statement")
    totals = report["totals"]
    money.add_row(
        "credits",
        _money(totals["credits"]["webhook"]),
        _money(totals["credits"]["poll"]),
        _money(totals["credits"]["statement"]),
    )
    money.add_row(
        "debits", "—", _money(totals["debits"]["api"]), _money(totals["debits"]["statement"])
    )
    money.add_row(
        "refunds", "—", _money(totals["refunds"]["api"]), _money(totals["refunds"]["statement"])
    )
    balance = report["balance"]
    money.add_row("opening balance", "", "", _money(balance["opening_cents"]))
    money.add_row("closing balance", "", "", _money(balance["closing_cents"]))
    money.add_row("balance drift", "", "", _money(report["balance_drift_cents"]))
    console.print(money)
    if report["exceptions"]:
        table = Table("case", "subject", "ref", "status", "state", "reason", title="Exceptions")
        for case in report["exceptions"]:
            table.add_row(
                str(case["case_id"]),
                case["subject"],
                case["ref"],
                case["status"],
                case["state"],
                case["reason"],
            )
        console.print(table)
    verdict = "all reconciled" if result.exit_code == 0 else "exceptions remain"
    console.print(f"[bold]{verdict}[/] (exit code {result.exit_code})")


def export_exceptions(result: NightlyResult, kind: ExportFormat, path: Path) -> None:
    cases = result.report["exceptions"]
    if kind is ExportFormat.json:
        path.write_text(json.dumps(cases, indent=2) + "\n", encoding="utf-8")
        return
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=EXPORT_COLUMNS)
        writer.writeheader()
        writer.writerows(cases)
