"""``pixrecon`` — the console script: every command group of ``pixrecon.commands``,
assembled in one explicit list."""

from __future__ import annotations

import typer
from pydantic import ValidationError
from rich.markup import escape

from pixrecon.commands.common import EXIT_COULD_NOT_RUN, err
from pixrecon.commands.db import db_app
from pixrecon.commands.demo import demo
from pixrecon.commands.events import events_app
from pixrecon.commands.exceptions import exceptions_app
from pixrecon.commands.poll import poll
from pixrecon.commands.reconcile import reconcile_command
from pixrecon.commands.sandbox import sandbox
from pixrecon.commands.serve import serve, worker
from pixrecon.commands.webhooks import webhooks_app

app = typer.Typer(
    help="Pix webhook receiver and reconciliation worker.",
    no_args_is_help=True,
    add_completion=False,
)
# In the order `pixrecon --help` lists them: run it, feed it, look at the results.
app.command()(serve)
app.command()(worker)
app.add_typer(db_app, name="db")
app.add_typer(events_app, name="events")
app.command()(poll)
app.command("reconcile")(reconcile_command)
app.add_typer(exceptions_app, name="exceptions")
app.add_typer(webhooks_app, name="webhooks")
app.command()(sandbox)
app.command()(demo)


def main() -> None:
    try:
        app()
    except ValidationError as exc:
        # A setting with a value it cannot take (read when a command starts): say which
        # variable and why, in one line each — never a traceback, and never exit 1.
        for problem in exc.errors():
            name = "PIXRECON_" + "_".join(str(part) for part in problem["loc"]).upper()
            err.print(
                f"[bold red]error:[/] {name}={escape(repr(problem.get('input')))}: "
                f"{escape(problem['msg'])}"
            )
        raise SystemExit(EXIT_COULD_NOT_RUN) from None
