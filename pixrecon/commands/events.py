"""``pixrecon events``: the inbox — every notification and polled item — listed, shown,
replayed or ignored."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer
from rich.table import Table

from pixrecon.commands.common import (
    FormatOption,
    OutputFormat,
    console,
    database_or_exit,
    fail,
)
from reconcile.db import session_scope
from reconcile.settings import get_settings

events_app = typer.Typer(
    help="Inbox items (every notification and polled item). Without a subcommand: list them.",
    invoke_without_command=True,
)


@events_app.callback()
def events(
    ctx: typer.Context,
    status: Annotated[str | None, typer.Option(help="pending, processed, failed, …")] = None,
    source: Annotated[str | None, typer.Option(help="webhook or poll")] = None,
    limit: Annotated[int, typer.Option(help="newest N items")] = 50,
    output: FormatOption = OutputFormat.table,
) -> None:
    """List inbox items, newest first."""
    if ctx.invoked_subcommand is not None:
        return
    from reconcile.queries import inbox_item_view, list_inbox

    engine = database_or_exit(get_settings(), auto_upgrade=False)
    with session_scope(engine) as session:
        rows = [
            inbox_item_view(item)
            for item in list_inbox(session, status=status, source=source, limit=limit)
        ]
    if output is OutputFormat.json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    table = Table("id", "source", "kind", "key", "status", "dup", "received_at")
    for row in rows:
        table.add_row(
            str(row["id"]),
            row["source"],
            row["kind"],
            row["key"],
            row["status"],
            str(row["duplicates"]),
            row["received_at"],
        )
    console.print(table)


@events_app.command("show")
def events_show(
    item_id: Annotated[int, typer.Argument(help="inbox item id")],
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
    item_id: Annotated[int, typer.Argument(help="inbox item id")],
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

        build_runtime(settings, engine).dispatcher.dispatch([item_id])
        console.print(f"item {item_id} is pending again and was sent to the workers")
        return
    report = process_items(engine, [item_id])
    outcome = "processed" if report.processed else "failed" if report.failed else "unsupported"
    console.print(f"item {item_id} replayed: {outcome}")


@events_app.command("ignore")
def events_ignore(
    item_id: Annotated[int, typer.Argument(help="inbox item id")],
    reason: Annotated[str, typer.Option(help="why it needs no processing")],
) -> None:
    """Mark an item as needing no processing, with the reason."""
    from reconcile.inbox import ignore

    engine = database_or_exit(get_settings(), auto_upgrade=False)
    with session_scope(engine) as session:
        if ignore(session, item_id, reason) is None:
            raise fail(f"no inbox item {item_id}")
    console.print(f"item {item_id} ignored")
