"""What every command shares: the consoles, one way to fail (one line, exit code 2), the
``--format`` choice, and opening the database or exiting cleanly."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from sqlalchemy import Engine

from pixrecon.bootstrap import StartupError, open_database
from reconcile.settings import Settings

console = Console()
err = Console(stderr=True)

# Exit codes (README): 0 ok; 1 only for "exceptions remain" (``pixrecon reconcile``);
# 2 whenever a command could not do what it was asked.
EXIT_COULD_NOT_RUN = 2


class OutputFormat(StrEnum):
    table = "table"
    json = "json"


FormatOption = Annotated[
    OutputFormat, typer.Option("--format", "-f", help="table for people, json for programs")
]


def one_line(exc: BaseException) -> str:
    """An error as one line a person can act on: its kind and the first line of what it
    says (drivers add lines of background a terminal does not need)."""
    said = str(exc).strip().splitlines()
    return escape(f"{type(exc).__name__}: {said[0] if said else ''}")


def fail(message: str, code: int = EXIT_COULD_NOT_RUN) -> typer.Exit:
    """Say what is wrong on stderr; the caller raises the returned ``Exit``."""
    err.print(f"[bold red]error:[/] {message}")
    return typer.Exit(code)


def database_or_exit(settings: Settings, *, auto_upgrade: bool) -> Engine:
    try:
        return open_database(settings, auto_upgrade=auto_upgrade)
    except StartupError as exc:
        raise fail(str(exc)) from None
