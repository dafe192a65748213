"""``pixrecon dashboard hash-password``: a line for ``PIXRECON_DASHBOARD_USERS``, the same
as ``python -m dashboard hash-password`` (docs/dashboards.md)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from dashboard.__main__ import Refused, hash_line
from pixrecon.commands.common import fail

dashboard_app = typer.Typer(help="The built-in dashboard (docs/dashboards.md).")


@dashboard_app.command("hash-password")
def hash_password(
    name: Annotated[str | None, typer.Argument(help="the user's name, before the hash")] = None,
) -> None:
    """Print NAME:HASH for PIXRECON_DASHBOARD_USERS; the password is read without echo
    (twice), or from standard input when it is not a terminal."""
    try:
        line = hash_line(name)
    except Refused as exc:
        # As every command's error: one line, a log event where stderr carries JSON.
        raise fail(escape(str(exc))) from None
    print(line)
