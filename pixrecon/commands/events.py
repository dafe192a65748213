"""``pixrecon events``: the inbox — every notification and polled item — listed, shown,
replayed or ignored."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from sqlalchemy import Engine

from pixrecon.commands.common import (
    FormatOption,
    OutputFormat,
    at_most_max_id,
    broker_or_exit,
    console,
    database_or_exit,
    fail,
    known_id,
    moment_option,
)
from reconcile.db import session_scope
from reconcile.formats import count, sp_time
from reconcile.masking import mask_payload
from reconcile.models import ItemKind, ItemStatus, Source
from reconcile.settings import Settings, get_settings

events_app = typer.Typer(
    help="Inbox items (every notification and polled item). Without a subcommand: list them.",
    invoke_without_command=True,
)


@events_app.callback()
def events(
    ctx: typer.Context,
    status: Annotated[ItemStatus | None, typer.Option(help="only items in this status")] = None,
    source: Annotated[Source | None, typer.Option(help="only items from this source")] = None,
    limit: Annotated[int, typer.Option(min=1, help="newest N items", callback=at_most_max_id)] = 50,
    ref: Annotated[
        str | None,
        typer.Option(
            help="only items carrying this reference (endToEndId, txid, rtrId, idRec, "
            "idempotencyKey or the provider's id), with the deliveries that carried them"
        ),
    ] = None,
    output: FormatOption = OutputFormat.table,
) -> None:
    """List inbox items, newest first."""
    if ctx.invoked_subcommand is not None:
        return
    from reconcile.queries import deliveries_of, inbox_item_view, items_by_ref, list_inbox

    engine = database_or_exit(get_settings(), auto_upgrade=False)
    with session_scope(engine) as session:
        if ref is None:
            items = list_inbox(session, status=status, source=source, limit=limit)
        else:
            items = items_by_ref(session, ref, status=status, source=source, limit=limit)
        rows = [inbox_item_view(item) for item in items]
        if ref is not None:
            carried = deliveries_of(session, [row["id"] for row in rows])
            for row in rows:
                row["deliveries"] = carried[row["id"]]
    if output is OutputFormat.json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return

    def listing(narrow: bool) -> Table:
        # Folded, never cut: the key (and a kind) is what a person searches for next.
        table = Table()
        for name in ("id", "source", "kind", "key", "status", "dup", "warn"):
            table.add_column(name, overflow="fold")
        _time_column(table, narrow)
        for row in rows:
            table.add_row(
                str(row["id"]),
                row["source"],
                row["kind"],
                row["key"],
                row["status"],
                str(row["duplicates"]),
                str(len(row["warnings"])),
                sp_time(row["received_at"], seconds=True),
            )
        return table

    _print_whole(listing)
    if ref is not None:
        _print_deliveries(rows)


def _time_column(table: Table, narrow: bool) -> None:
    # Never cut (a time cut to "26/11/20…" says nothing): where the table is too wide for
    # the terminal, the time goes under its date, and the other columns fold.
    if narrow:
        table.add_column("received (São Paulo)", width=len("dd/mm/yyyy"))
    else:
        table.add_column("received (São Paulo)", min_width=len("dd/mm/yyyy"))


def _print_whole(table_for: Callable[[bool], Table]) -> None:
    """Print the table with the time on one line if the terminal is wide enough, else
    under its date. Shrinking a table, rich takes the time's column below the date's
    width when every column that folds is as narrow, then gives the date its width back:
    the table comes out wider than the terminal, and its right edge, a time with it, is
    cut. A time column of the date's width stays out of that shrinking."""
    table = table_for(False)
    drawn = io.StringIO()
    Console(width=console.width, file=drawn, color_system=None).print(table, crop=False)
    if any(cell_len(line) > console.width for line in drawn.getvalue().splitlines()):
        table = table_for(True)
    console.print(table)


def _print_deliveries(rows: list[dict[str, Any]]) -> None:
    def deliveries(narrow: bool) -> Table:
        table = Table("delivery", "item")
        table.add_column("route", overflow="fold")
        table.add_column("remote_addr", overflow="fold")
        table.add_column("items")
        _time_column(table, narrow)
        for row in rows:
            for delivery in row["deliveries"]:
                table.add_row(
                    str(delivery["id"]),
                    str(row["id"]),
                    delivery["route"],
                    delivery["remote_addr"] or "",
                    str(delivery["item_count"]),
                    sp_time(delivery["received_at"], seconds=True),
                )
        return table

    _print_whole(deliveries)


@events_app.command("show")
def events_show(
    item_id: Annotated[
        int, typer.Argument(metavar="ID", help="inbox item id", callback=known_id("inbox item"))
    ],
    output: FormatOption = OutputFormat.table,
) -> None:
    """Show one inbox item: its fields, references and warnings, then its payload (JSON,
    CPF/CNPJ and names masked). With --format json, all of it as one JSON object (times in
    ISO 8601, UTC)."""
    from reconcile.models import InboxItem
    from reconcile.queries import inbox_item_view

    engine = database_or_exit(get_settings(), auto_upgrade=False)
    with session_scope(engine) as session:
        item = session.get(InboxItem, item_id)
        if item is None:
            raise fail(f"no inbox item {item_id}")
        view = inbox_item_view(item)
        # Payers' documents and names masked, as in the logs and the dashboard: a
        # terminal's scrollback, a pasted ticket or a redirected file keeps what it shows.
        view["payload"] = mask_payload(json.loads(item.payload))
    if output is OutputFormat.json:
        sys.stdout.write(json.dumps(view, indent=2, ensure_ascii=False) + "\n")
        return
    _print_item(view)


# The item's instants, as a person reads them (São Paulo time, to the second).
_TIMES = {
    "received_at": "received",
    "webhook_at": "notified",
    "poll_at": "polled",
    "processed_at": "processed",
}


def _print_item(view: dict[str, Any]) -> None:
    table = Table("field", "value", show_header=False)
    for name in ("id", "source", "kind", "key", "status"):
        table.add_row(name, escape(str(view[name])))
    for name, label in _TIMES.items():
        table.add_row(f"{label} (São Paulo)", sp_time(view[name], seconds=True))
    for name in ("webhook_count", "poll_count", "duplicates", "attempts"):
        table.add_row(name, str(view[name]))
    table.add_row("error", escape(view["error"] or "—"))
    for ref, values in view["refs"].items():
        table.add_row(f"ref {escape(ref)}", escape(", ".join(values)))
    for warning in view["warnings"]:
        said = ", ".join(f"{k}: {v}" for k, v in warning.items() if k != "pointer")
        table.add_row(f"warning {escape(str(warning.get('pointer', '')))}", escape(said))
    console.print(table)
    # The payload whole, in the shape stored (personal data masked): it is what a person
    # compares with the provider's documentation.
    sys.stdout.write(json.dumps(view["payload"], indent=2, ensure_ascii=False) + "\n")


@events_app.command("replay")
def events_replay(
    item_id: Annotated[
        int | None,
        typer.Argument(
            metavar="[ID]", help="one inbox item, by id", callback=known_id("inbox item")
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            help="items received at or after this time: 2026-11-22 or 2026-11-22T14:30 "
            "(São Paulo time unless an offset is given)"
        ),
    ] = None,
    kind: Annotated[ItemKind | None, typer.Option(help="items of this kind")] = None,
    ref: Annotated[
        str | None,
        typer.Option(help="items carrying this reference (endToEndId, txid, rtrId, …)"),
    ] = None,
    status: Annotated[
        list[ItemStatus] | None,
        typer.Option(
            help="items in this status (repeatable); default failed and unsupported. "
            "Processed items are never selected"
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(min=1, help="at most N items, oldest first", callback=at_most_max_id),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="list what would be replayed; change nothing")
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="replay the item ID even if it was processed (its writes are keyed: "
            "nothing it did happens twice)",
        ),
    ] = False,
    output: FormatOption = OutputFormat.table,
) -> None:
    """Process items again — one by id, or a selection: failed since a time, of a kind,
    carrying a reference. Processed items are skipped (a replay never does an effect twice);
    every replay, dry runs too, is recorded with who, when and how many.

    Exit codes: 0 replayed (or nothing matched); 2 ID is processed and --force was not
    given, bad options, unknown ID, or the database is unreachable."""
    from reconcile.cases import command_line_actor
    from reconcile.replay import NothingSelected, Selection, replay_items

    try:
        selection = Selection(
            item_id=item_id,
            since=moment_option(since, "--since") if since is not None else None,
            kind=kind.value if kind is not None else None,
            ref=ref,
            statuses=tuple(status or ()),
            limit=limit,
            force=force,
        )
    except NothingSelected as exc:
        raise fail(str(exc)) from None
    settings = get_settings()
    engine = database_or_exit(settings, auto_upgrade=False)
    result = replay_items(engine, selection, actor=command_line_actor(), dry_run=dry_run)
    if item_id is not None and result.refused is None and not result.chosen:
        raise fail(f"no inbox item {item_id}")
    if result.refused is not None:
        raise fail(
            f"item {item_id} was already processed: replaying it would do nothing new "
            "(use --force to run it again anyway)"
        )
    sent = _send(settings, engine, result.flipped) if result.flipped else ""
    rows = [
        {
            "id": item.id,
            "kind": item.kind,
            "key": item.key,
            "status_before": item.status,
            "received_at": item.received_at.isoformat(),
        }
        for item in result.chosen
    ]
    if output is OutputFormat.json:
        body = {
            "dry_run": dry_run,
            "selected": len(result.chosen),
            "replayed": len(result.flipped),
            "by_kind": result.by_kind(),
            "recorded_as": result.action_id,
            "items": rows,
        }
        sys.stdout.write(json.dumps(body, indent=2) + "\n")
        return

    def chosen(narrow: bool) -> Table:
        table = Table()
        for name in ("id", "kind", "key", "status before"):
            table.add_column(name, overflow="fold")
        _time_column(table, narrow)
        for item in result.chosen:
            table.add_row(str(item.id), item.kind, item.key, item.status, sp_time(item.received_at))
        return table

    if result.chosen:
        _print_whole(chosen)
    if dry_run:
        console.print(f"would replay {_items(len(result.chosen))}; nothing changed (dry run)")
    elif not result.chosen:
        console.print("no item matched: nothing replayed")
    else:
        skipped = len(result.chosen) - len(result.flipped)
        console.print(
            f"{_items(len(result.flipped))} pending again{sent}"
            + (f"; {skipped} changed meanwhile and were left alone" if skipped else "")
        )


def _items(n: int) -> str:
    return f"{count(n)} item{'' if n == 1 else 's'}"


def _send(settings: Settings, engine: Engine, ids: list[int]) -> str:
    """After the commit: to the workers in production, processed here in single-node mode."""
    if settings.broker_url:
        from worker.runtime import build_runtime

        broker_or_exit(settings, reachable=False)
        if build_runtime(settings, engine).dispatcher.dispatch(ids, origin="replay"):
            return ", sent to the workers"
        return "; the workers' sweeper will send them"
    from reconcile.processing import process_items

    report = process_items(engine, ids)
    return (
        f" and processed here: {len(report.processed)} processed, {len(report.failed)} "
        f"failed, {len(report.unsupported)} unsupported"
    )


@events_app.command("ignore")
def events_ignore(
    item_id: Annotated[
        int, typer.Argument(metavar="ID", help="inbox item id", callback=known_id("inbox item"))
    ],
    reason: Annotated[str, typer.Option(help="why it needs no processing")],
) -> None:
    """Mark an item not processed (pending, failed, unsupported) as needing no processing,
    with the reason. A processed item is refused: its effects are stored."""
    from reconcile.inbox import ignore
    from reconcile.models import InboxItem, ItemStatus

    if not reason.strip():
        raise fail("ignoring an item needs --reason: say why it needs no processing")
    engine = database_or_exit(get_settings(), auto_upgrade=False)
    with session_scope(engine) as session:
        found = session.get(InboxItem, item_id)
        if found is None:
            raise fail(f"no inbox item {item_id}")
        # Its effects are stored: calling it ignored would hide that they happened.
        if found.status == ItemStatus.PROCESSED.value:
            raise fail(f"item {item_id} was processed: its effects are stored, nothing to ignore")
        ignore(session, item_id, reason.strip())
    console.print(f"item {item_id} ignored")
