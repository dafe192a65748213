"""Rendering a day's reconciliation for people, in a terminal: ``pixrecon reconcile``,
``pixrecon exceptions`` and the demo print the same tables (files are
``reconcile/exports``)."""

from __future__ import annotations

import json
from collections.abc import Collection
from datetime import date
from typing import Any, TextIO

from rich.console import Console, ConsoleOptions, RenderResult
from rich.markup import escape
from rich.measure import Measurement
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from reconcile.cases import iter_case_rows, med_deadline_passed
from reconcile.db import session_scope
from reconcile.formats import br_date, brl, count, sp_time
from reconcile.nightly import NightlyResult
from reconcile.priorities import URGENT_PRIORITY

VERDICT_WORDS = {
    "reconciled": "[bold green]reconciled[/]: every source was read and agrees",
    "reconciled_with_pending": (
        "[bold yellow]reconciled with pending items[/]: everything agrees except items "
        "still inside their grace period (listed with the time each becomes a break)"
    ),
    "breaks": "[bold red]breaks[/]: exceptions remain (above)",
    "incomplete": "[bold red]incomplete[/]: a source could not be read, nothing is claimed",
}


# Holds the space of ``R$ 1.234,56`` while a text is wrapped: one cell wide and no
# whitespace to rich, so the line never breaks there; written back as a space.
_AMOUNT_SPACE = "\u2800"


class WholeAmounts:
    """Markup that wraps as any text does, except inside an amount: rich breaks lines at
    any space, a no-break space included, and ``R$`` at the end of one line with its
    figure on the next reads as two values."""

    def __init__(self, markup: str) -> None:
        self._text = Text.from_markup(markup.replace("R$ ", "R$" + _AMOUNT_SPACE))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for segment in console.render(self._text, options):
            yield Segment(segment.text.replace(_AMOUNT_SPACE, " "), segment.style, segment.control)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self._text)


def human_table(*headers: str, title: str | None = None, amounts: Collection[str] = ()) -> Table:
    """A table that wraps rather than truncates: an endToEndId cut to ``…`` is
    information lost, so every column folds at narrow widths. The columns named in
    ``amounts`` hold ``R$ 1.234,56`` and never wrap: ``R$`` on one line and the figure on
    the next, or a figure cut in two, is misread; the other columns give way first."""
    table = Table(title=title, title_justify="left")
    for header in headers:
        table.add_column(header, overflow="fold", no_wrap=header in amounts)
    return table


def _counts(report: dict[str, Any]) -> list[Table]:
    tables = []
    for title, key in (
        ("movements", "counts"),
        ("charges", "charges"),
        ("payouts", "payouts"),
        ("infractions", "infractions"),
        ("statement lines", "statement"),
    ):
        # ``duplicate`` counts deliveries, not money: it has its own section.
        counts = {k: v for k, v in report.get(key, {}).items() if k != "duplicate"}
        if counts:
            table = human_table(title, "n")
            for name, n in sorted(counts.items()):
                table.add_row(name, count(n))
            tables.append(table)
    return tables


def _bridge(report: dict[str, Any]) -> Table:
    bridge = report["bridge"]
    rows = bridge["categories"]
    carried = [row["carried_in_cents"] - row["carried_out_cents"] for row in rows]
    # Columns with nothing to say are left out, so the table fits 80 columns.
    show_carried = any(carried)
    show_difference = any(row["difference_cents"] for row in rows)
    headers = ["", "webhook", "API", "statement"]
    headers += ["carried"] * show_carried + ["difference"] * show_difference
    table = human_table(
        *headers, title="From the opening to the closing balance", amounts=headers[1:]
    )
    blank = [""] * (len(headers) - 4)

    def line(label: str, statement: str) -> None:
        table.add_row(label, "", "", statement, *blank)

    line("opening balance", brl(bridge["opening_cents"]))
    for row, moved in zip(rows, carried, strict=True):
        sign = {1: "+ ", -1: "- ", 0: "? "}[row["sign"]]
        extra = [brl(moved) if moved else ""] * show_carried
        if show_difference:
            extra.append(brl(row["difference_cents"]) if row["difference_cents"] else "")
        table.add_row(
            sign + row["label"],
            brl(row["webhook_cents"]),
            brl(row["api_cents"]),
            brl(row["statement_cents"]),
            *extra,
        )
    line("closing balance", brl(bridge["closing_cents"]))
    line("[bold]unexplained residual[/]", brl(bridge["residual_cents"]))
    return table


def _med_summary(med: dict[str, Any]) -> WholeAmounts:
    # Said above the table, not as its title: a title wraps wherever rich likes.
    return WholeAmounts(
        f"MED: {med['open_cases']} open, {brl(med['at_risk_cents'])} at risk "
        f"({brl(med['blocked_cents'])} blocked); {brl(med['debited_cents'])} debited "
        "by cases closed this day"
    )


def _med(med: dict[str, Any]) -> Table:
    table = human_table(
        "case",
        "state",
        "amount",
        "blocked",
        "debited",
        "deadline",
        amounts=("amount", "blocked", "debited"),
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


def deliveries_table(deliveries: dict[str, int]) -> Table:
    """How the day's movements arrived: facts about webhooks, apart from money."""
    table = human_table("deliveries", "n", title="Deliveries (no effect on money)")
    for key, label in (
        ("by_webhook", "notified by webhook"),
        ("found_only_by_polling", "found only by polling"),
        ("only_in_statement", "only in the statement"),
        ("duplicate_webhooks", "duplicate webhooks counted"),
    ):
        table.add_row(label, count(deliveries.get(key, 0)))
    return table


def _references(case: dict[str, Any]) -> list[str]:
    refs = []
    if case.get("end_to_end_id") and case["end_to_end_id"] != case["ref"]:
        refs.append(f"endToEndId {case['end_to_end_id']}")
    if case.get("txid") and case["txid"] not in case["ref"]:
        refs.append(f"txid {case['txid']}")
    payer = " ".join(p for p in (case.get("payer_document"), case.get("payer_name")) if p)
    if payer:
        refs.append(f"payer {payer}")
    if case.get("payer_request"):
        refs.append(f"“{case['payer_request']}”")
    return [escape(ref) for ref in refs]


def _age(case: dict[str, Any]) -> str:
    days = case.get("age_days") or 0
    return f"{case['lifecycle']}" + (f", {days} d" if days else "")


EXCEPTION_COLUMNS_WIDE = (
    ("case", "case_id"),
    ("date", "date"),
    ("subject", "subject"),
    ("ref", "ref"),
    ("status", "status"),
    ("state", "state"),
    ("lifecycle", "lifecycle"),
    ("since", "first_seen"),
    ("age", "age_days"),
    ("priority", "priority"),
    ("expected", "expected_cents"),
    ("actual", "actual_cents"),
    ("differs", "differs"),
    ("refund by", "refund_by"),
    ("MED deadline", "med_deadline_at"),
    ("txid", "txid"),
    ("endToEndId", "end_to_end_id"),
    ("payer doc", "payer_document"),
    ("payer", "payer_name"),
    ("payer info", "payer_request"),
    ("why", "reason"),
    ("what to do", "action"),
    ("note", "note"),
)


def _cell(key: str, value: Any) -> str:
    if key.endswith("_cents"):
        return brl(value)
    if key in ("date", "first_seen", "refund_by"):
        return br_date(value) if value else ""
    if key == "med_deadline_at":
        return sp_time(value) if value else ""
    return "" if value is None else escape(str(value))


def med_deadline_line(deadline: str, today: date | None) -> str:
    """An open MED case's analysis deadline, said where money's last day to be refunded
    is: the instant to answer it by (São Paulo time)."""
    passed = today is not None and med_deadline_passed(deadline, today)
    return f"MED analysis deadline {sp_time(deadline)}{' — passed' if passed else ''}"


URGENT_MARK = (
    "! urgent (priority 1): money near or past its last day to be refunded, or an open "
    "MED case near or past its analysis deadline"
)


def exceptions_table(
    cases: list[dict[str, Any]],
    *,
    wide: bool = False,
    title: str = "Exceptions",
    today: date | None = None,
) -> Table:
    """Each exception with how much, why, what to do and the references a person knows
    it by. Narrow (the default) fits 80 columns by stacking these in three columns;
    ``wide`` gives every field its own column. ``today``: for a work list read today, a
    last day to refund that has gone by says so (a day's report reads as of its end)."""
    if wide:
        table = human_table(
            *(header for header, _ in EXCEPTION_COLUMNS_WIDE),
            title=title,
            amounts=[h for h, key in EXCEPTION_COLUMNS_WIDE if key.endswith("_cents")],
        )
        for case in cases:
            table.add_row(*(_cell(key, case.get(key)) for _, key in EXCEPTION_COLUMNS_WIDE))
        return table
    table = human_table("case", "exception", "amounts", title=title, amounts=("amounts",))
    if any(case.get("priority") == URGENT_PRIORITY for case in cases):
        # A mark nobody explains reads as noise.
        table.caption, table.caption_justify = URGENT_MARK, "left"
    for case in cases:
        urgent = " [bold red]![/]" if case.get("priority") == URGENT_PRIORITY else ""
        about = [
            f"[bold]{case['status']}[/] ({case['state']}) · {case['subject']} "
            f"{escape(case['ref'])} · {br_date(case['date'])}",
            *_references(case),
            f"why: {escape(case['reason'] or '')}",
            f"[bold]→ {escape(case['action'])}[/]",
        ]
        if case.get("refund_by"):
            passed = today is not None and today > date.fromisoformat(str(case["refund_by"]))
            about.append(f"refund by {br_date(case['refund_by'])}{' — passed' if passed else ''}")
        if case.get("med_deadline_at"):
            about.append(med_deadline_line(case["med_deadline_at"], today))
        if case.get("note"):
            about.append(f"note: {escape(case['note'])}")
        table.add_row(
            f"{case['case_id']}{urgent}\n{_age(case)}",
            WholeAmounts("\n".join(about)),
            f"expected\n{brl(case['expected_cents'])}\nactual\n{brl(case['actual_cents'])}",
        )
    return table


# A day with thousands of exceptions prints the most urgent; the rest are a command away.
EXCEPTIONS_SHOWN = 50


def print_report(result: NightlyResult, console: Console) -> None:
    report = result.summary
    console.print(
        f"[bold]Reconciliation of {br_date(report['date'])}[/] (run {result.run_id}, "
        f"as of {sp_time(report['as_of'])} São Paulo time)"
    )
    if report.get("provisional"):
        console.print(
            "[yellow]The day is not over: this answer is provisional. Run it again after "
            "midnight (São Paulo) for the day's own.[/]"
        )
    console.print(*_counts(report))
    console.print(_bridge(report))
    med = report["med"]
    if med["cases"]:
        console.print(_med_summary(med))
        console.print(_med(med))
    if report["pending"]:
        table = human_table(
            "subject",
            "ref",
            "amount",
            "becomes a break at",
            "why",
            title="Pending",
            amounts=("amount",),
        )
        for item in report["pending"]:
            table.add_row(
                item["subject"],
                escape(item["ref"]),
                brl(item["amount_cents"]),
                sp_time(item["due_at"]) if item["due_at"] else "when the provider answers",
                WholeAmounts(escape(item["reason"])),
            )
        console.print(table)
    for direction, title in (
        ("carried_in", "Carried in from the day before"),
        ("carried_out", "Carried out to the next day"),
    ):
        if report[direction]:
            table = human_table("subject", "ref", "amount", title=title, amounts=("amount",))
            for item in report[direction]:
                table.add_row(item["subject"], escape(item["ref"]), brl(item["amount_cents"]))
            console.print(table)
    shown = result.exceptions(limit=EXCEPTIONS_SHOWN) if report["open_exceptions"] else []
    if shown:
        console.print(exceptions_table(shown))
    if report["open_exceptions"] > len(shown):
        day = report["date"]
        console.print(
            f"above, the {count(len(shown))} most urgent of {count(report['open_exceptions'])} "
            f"exceptions; all of them: [bold]pixrecon exceptions --date {day}[/], or for a "
            f"spreadsheet [bold]pixrecon export --date {day} --kind exceptions --format csv "
            "--excel[/]"
        )
    console.print(deliveries_table(report.get("deliveries", {})))
    for reason in report["incomplete_because"]:
        console.print(f"[red]not read:[/] {escape(reason)}")
    console.print(WholeAmounts(f"{_verdict_line(report)} (exit code {result.exit_code})"))


def _verdict_line(report: dict[str, Any]) -> str:
    if report["verdict"] != "breaks" or report["open_exceptions"]:
        return VERDICT_WORDS[report["verdict"]]
    # No case left to point at: say what still breaks the day.
    residual = (report.get("bridge") or {}).get("residual_cents")
    found = report.get("exceptions_found", 0)
    why = []
    if found:
        why.append(
            f"the run found {count(found)} "
            f"{'exception' if found == 1 else 'exceptions'}, each case resolved by a person "
            f"([bold]pixrecon exceptions --all --date {report['date']}[/] lists them)"
        )
    if residual:
        why.append(
            f"the bridge from opening to closing balance leaves {brl(residual)} unexplained "
            "(above): lines of the statement may be missing, or the provider's running "
            "balances disagree with its own lines — ask the provider for the day's full "
            "statement"
        )
    return "[bold red]breaks[/]: " + "; and ".join(why) if why else VERDICT_WORDS["breaks"]


def write_json_report(result: NightlyResult, out: TextIO) -> None:
    """The run's report as one JSON document, its ``exceptions`` written as they are read:
    a day of tens of thousands of exceptions never sits whole in memory."""
    head = json.dumps(result.summary)
    out.write(head[:-1] + (', "exceptions": [' if result.summary else '"exceptions": ['))
    with session_scope(result.engine) as session:
        for n, row in enumerate(iter_case_rows(session, day=result.day, by_priority=True)):
            out.write((", " if n else "") + json.dumps(row))
    out.write("]}\n")
