"""``pixrecon prune``: the retention period applied now — old raw bodies and processed
items of reconciled days deleted, personal data in what stays masked
(``reconcile/retention.py``)."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from pixrecon.commands.common import (
    FormatOption,
    OutputFormat,
    console,
    database_or_exit,
    progress,
)
from reconcile.settings import MAX_DAYS, get_settings

# What each count means, in the order the table shows them.
COLUMNS = (
    ("deleted", "rows deleted"),
    ("raw_removed", "raw bodies removed"),
    ("masked", "rows masked"),
)
KEPT_WORDS = {
    "needs_a_person": "pending, failed or unsupported (they need a person)",
    "day_not_reconciled": "of a day whose latest run is not reconciled, or has no run",
    "open_exception": "named by an open or acknowledged exception",
    "unread": "listed by the provider but unreadable: their days were not read whole (never "
    "pruned; a read that reads them clears them)",
}


def prune_command(
    days: Annotated[
        int | None,
        typer.Option(
            # As PIXRECON_RETENTION_DAYS: a longer period reaches before any date.
            min=1,
            max=MAX_DAYS,
            help="retention period in days (default PIXRECON_RETENTION_DAYS, 90)",
            show_default=False,
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="count what would be deleted and masked; change nothing"),
    ] = False,
    output: FormatOption = OutputFormat.table,
) -> None:
    """Delete raw bodies and processed inbox items older than the retention period, and
    mask payers' and debtors' documents and names in the results that stay.

    Never deleted: reconciled results (Pix received, refunds, movements, statement lines,
    charges), runs, verdicts, exception cases and operator actions; inbox items still
    pending, failed or unsupported; items of a business day whose latest run is not
    `reconciled` (or that has no run); items an open or acknowledged exception names;
    items a provider's listing sent that could not be read (until a read reads them).
    Those are kept whole, and released by a later prune once that changes. Works in
    short transactions, so the receiver keeps taking deliveries, and can be interrupted
    and run again. Every prune, dry runs too, is recorded with who, when and how many.

    Exit codes: 0 done (or nothing to do); 2 bad options, or the database is
    unreachable."""
    from reconcile.cases import command_line_actor
    from reconcile.formats import count, sp_time
    from reconcile.retention import prune
    from reconcile.timeutil import utcnow

    settings = get_settings()
    retention = days if days is not None else settings.retention_days
    engine = database_or_exit(settings, auto_upgrade=False)
    done = 0
    with progress() as bar:
        task = bar.add_task("pruning …", total=None)

        def advance(what: str, rows: int) -> None:
            nonlocal done
            done += rows
            bar.update(task, description=f"{what}: {count(done)} rows looked at")

        report = prune(
            engine,
            now=utcnow(),
            retention_days=retention,
            actor=command_line_actor(),
            dry_run=dry_run,
            on_progress=advance,
        )
    if output is OutputFormat.json:
        sys.stdout.write(json.dumps(report.as_dict(), indent=2) + "\n")
        return
    from pixrecon.report import human_table

    verb = "would be" if dry_run else "were"
    console.print(
        f"Retention {retention} day{'' if retention == 1 else 's'}: data received before "
        f"{sp_time(report.cutoff)} (São Paulo time)"
    )
    tables = {name: n for name, n in report.tables().items() if any(n.values())}
    if tables:
        table = human_table("table", *(words for _, words in COLUMNS))
        for name, counts in tables.items():
            table.add_row(name, *(_cell(counts[key]) for key, _ in COLUMNS))
        console.print(table)
    kept = {reason: n for reason, n in report.kept.items() if n}
    if kept:
        table = human_table("old items kept whole", "n")
        for reason, n in kept.items():
            table.add_row(KEPT_WORDS.get(reason, reason), count(n))
        console.print(table)
    console.print(_summary(report.as_dict(), verb, dry_run))


def _cell(n: int) -> str:
    from reconcile.formats import count

    return count(n) if n else ""


def _summary(body: dict[str, Any], verb: str, dry_run: bool) -> str:
    from reconcile.formats import br_date, count

    if not body["total"]:
        return "nothing to prune: every old item is either gone already or still needed"
    days = body["days"]
    span = f" ({br_date(days[0])} to {br_date(days[-1])})" if days else ""
    said = (
        f"{count(body['total'])} row{'' if body['total'] == 1 else 's'} {verb} deleted, "
        f"emptied or masked, from {count(len(days))} reconciled "
        f"day{'' if len(days) == 1 else 's'}{span}"
    )
    if dry_run:
        return said + "; nothing changed (dry run)"
    return said + f" (recorded as operator action {body['recorded_as']})"
