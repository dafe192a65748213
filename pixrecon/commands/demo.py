"""``pixrecon demo``: the whole path once against the sandbox, with no services needed."""

from __future__ import annotations

from typing import Annotated

import typer

from pixrecon.commands.common import console


def demo(
    pix: Annotated[int, typer.Option(help="how many Pix the sandbox receives")] = 300,
    seed: Annotated[int, typer.Option(help="random seed of the fault plan")] = 7,
    database_url: Annotated[
        str, typer.Option(help="database for the demo (recreated when it is a SQLite file)")
    ] = "sqlite:///pixrecon-demo.db",
) -> None:
    """Run the whole path once against the sandbox, with no services needed."""
    from pixrecon.demo import run_demo

    raise typer.Exit(run_demo(pix_count=pix, seed=seed, database_url=database_url, console=console))
