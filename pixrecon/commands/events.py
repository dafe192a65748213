"""``pixrecon events``: the inbox — every notification and polled item — listed, shown,
replayed or ignored."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer
from rich.table import Table

from pixrecon.commands.common import (
    FormatOption,
    OutputFormat,
    broker_or_exit,
    console,
    database_or_exit,
    fail,
)
from reconcile.db import session_scope
from reconcile.models import ItemStatus, Source
from reconcile.settings import get_settings

events_app = typer.Typer(
    help="Inbox items (every notification and polled item). Without a subcommand: list them.",
    invoke_without_command=True,
)


@events_app.callback()
def events(
    ctx: typer.Context,
    status: Annotated[ItemStatus | None, typer.Option(help="only items in this status")] = None,
    source: Annotated[Source | None, typer.Option(help="only items from this source")] = None,
    limit: Annotated[int, typer.Option(min=1, help="newest N items")] = 50,
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
    table = Table("id", "source", "kind", "key", "status", "dup", "warn", "received_at")
    for row in rows:
        table.add_row(
            str(row["id"]),
            row["source"],
            row["kind"],
            row["key"],
            row["status"],
            str(row["duplicates"]),
            str(len(row["warnings"])),
            row["received_at"],
        )
    console.print(table)
    if ref is not None:
        _print_deliveries(rows)


def _print_deliveries(rows: list[dict[str, Any]]) -> None:
    table = Table("delivery", "item", "route", "remote_addr", "items", "received_at")
    for row in rows:
        for delivery in row["deliveries"]:
            table.add_row(
                str(delivery["id"]),
                str(row["id"]),
                delivery["route"],
                delivery["remote_addr"] or "",
                str(delivery["item_count"]),
                delivery["received_at"],
            )
    console.print(table)


@events_app.command("show")
def events_show(
    item_id: Annotated[int, typer.Argument(metavar="ID", help="inbox item id")],
) -> None:
    """Show one inbox item with its payload (JSON)."""
    from reconcile.models import InboxItem
    from reconcile.queries import inbox_item_view

    engine = database_or_exit(get_settings(), auto_upgrade=False)
    with session_scope(engine) as session:
        item = session.get(InboxItem, item_id)
        if item is None:
            raise fail(f"no inbox item {item_id}")
        view = inbox_item_view(item)
        view["payload"] = json.loads(item.payload)
    sys.stdout.write(json.dumps(view, indent=2, ensure_ascii=False) + "\n")


@events_app.command("replay")
def events_replay(
    item_id: Annotated[int, typer.Argument(metavar="ID", help="inbox item id")],
) -> None:
    """Process an item again (failed, unsupported or ignored ones included); domain writes
    are keyed, so replaying a processed item changes nothing it already did."""
    from reconcile.inbox import replay
    from reconcile.processing import process_items

    settings = get_settings()
    engine = database_or_exit(settings, auto_upgrade=False)
    with session_scope(engine) as session:
        if replay(session, item_id) is None:
            raise fail(f"no inbox item {item_id}")
    if settings.broker_url:
        from worker.runtime import build_runtime

        broker_or_exit(settings, reachable=False)
        if build_runtime(settings, engine).dispatcher.dispatch([item_id]):
            console.print(f"item {item_id} is pending again and was sent to the workers")
        else:
            console.print(f"item {item_id} is pending again; the workers' sweeper will send it")
        return
    report = process_items(engine, [item_id])
    outcome = "processed" if report.processed else "failed" if report.failed else "unsupported"
    console.print(f"item {item_id} replayed: {outcome}")


@events_app.command("ignore")
def events_ignore(
    item_id: Annotated[int, typer.Argument(metavar="ID", help="inbox item id")],
    reason: Annotated[str, typer.Option(help="why it needs no processing")],
) -> None:
    """Mark an item as needing no processing, with the reason."""
    from reconcile.inbox import ignore

    engine = database_or_exit(get_settings(), auto_upgrade=False)
    with session_scope(engine) as session:
        if ignore(session, item_id, reason) is None:
            raise fail(f"no inbox item {item_id}")
    console.print(f"item {item_id} ignored")
