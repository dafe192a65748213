"""``pixrecon dashboard hash-password``: a line for ``PIXRECON_DASHBOARD_USERS``, the same
as ``python -m dashboard hash-password`` (docs/dashboards.md)."""

from __future__ import annotations

from typing import Annotated

import typer

from dashboard.__main__ import main as dashboard_main

dashboard_app = typer.Typer(help="The built-in dashboard (docs/dashboards.md).")


@dashboard_app.command("hash-password")
def hash_password(
    name: Annotated[str | None, typer.Argument(help="the user's name, before the hash")] = None,
) -> None:
    """Print NAME:HASH for PIXRECON_DASHBOARD_USERS; the password is read without echo
    (twice), or from standard input when it is not a terminal."""
    raise typer.Exit(dashboard_main(["hash-password", *([name] if name else [])]))
