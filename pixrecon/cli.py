"""``pixrecon`` — the console script: every command group of ``pixrecon.commands``,
assembled in one explicit list, and the one place where errors become exit codes."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.markup import escape

from pixrecon.bootstrap import StartupError, why_unavailable
from pixrecon.commands.common import (
    EXIT_COULD_NOT_RUN,
    EXIT_INTERRUPTED,
    Interrupted,
    log,
    one_line,
    say,
    setting_problems,
)
from pixrecon.commands.dashboard import dashboard_app
from pixrecon.commands.db import db_app
from pixrecon.commands.demo import demo
from pixrecon.commands.events import events_app
from pixrecon.commands.exceptions import exceptions_app
from pixrecon.commands.export import export_command
from pixrecon.commands.poll import poll
from pixrecon.commands.prune import prune_command
from pixrecon.commands.reconcile import reconcile_command
from pixrecon.commands.sandbox import sandbox
from pixrecon.commands.serve import serve, worker
from pixrecon.commands.webhooks import webhooks_app
from pixrecon.output import ReaderMayLeave
from reconcile.db import UNAVAILABLE_ERRORS
from reconcile.logs import configure_logging
from reconcile.provider.factory import ProviderTlsError
from reconcile.settings import DEFAULT_DATABASE_URL, Settings, get_settings, unknown_variables

app = typer.Typer(
    help="Pix webhook receiver and reconciliation worker.",
    no_args_is_help=True,
    add_completion=False,
    # Paragraphs of a command's docstring are reflowed to the terminal's width (in rich
    # mode, Typer keeps each source line break and cuts lines in two at 80 columns).
    rich_markup_mode="markdown",
)


def _print_version(asked: bool) -> None:
    if asked:
        try:
            typer.echo(f"pixrecon {version('pixrecon')}")
        except PackageNotFoundError:
            typer.echo("pixrecon (not installed)")
        raise typer.Exit()


@app.callback()
def pixrecon(
    _version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="print the version"),
    ] = False,
) -> None:
    """Pix webhook receiver and reconciliation worker."""


# In the order `pixrecon --help` lists them: run it, feed it, look at the results.
app.command()(serve)
app.command()(worker)
app.add_typer(db_app, name="db")
app.add_typer(events_app, name="events")
app.command()(poll)
app.command("reconcile")(reconcile_command)
app.add_typer(exceptions_app, name="exceptions")
app.command("prune")(prune_command)
app.command("export")(export_command)
app.add_typer(webhooks_app, name="webhooks")
app.add_typer(dashboard_app, name="dashboard")
app.command()(sandbox)
app.command()(demo)


STOPPED = "the command stopped before it finished (Ctrl-C or SIGTERM)"


def _start_logging() -> None:
    """Logging in its final format before anything can log or fail, for every command.
    Settings that cannot be read fail the command itself, later; until then a lenient
    reading of the two logging variables will do."""
    try:
        settings = get_settings()
    except ValidationError:
        raw = os.environ.get("PIXRECON_LOG_JSON", "").strip().lower()
        json = True if raw in ("1", "true", "yes", "on") else None
        configure_logging("INFO", json=False if raw in ("0", "false", "no", "off") else json)
    else:
        configure_logging(settings.log_level, json=settings.log_json)
    _warn_about_unknown_variables()


def _warn_about_unknown_variables() -> None:
    """One warning per ``PIXRECON_*`` variable no setting reads: a misspelt one would
    otherwise leave its setting at the default without a word. Only a warning: a
    deployment may set variables of its own with the prefix."""
    for name, close in unknown_variables(os.environ):
        hint = f"did you mean {close}?" if close else "no setting has a name like it"
        say(
            f"{escape(name)} is set but is no pixrecon setting, so it is ignored: "
            f"{escape(hint)} (README, Configuration)",
            "warning",
        )


def _database_url() -> str:
    try:
        return get_settings().database_url
    except ValidationError:
        return DEFAULT_DATABASE_URL


def named_command(words: Sequence[str]) -> tuple[Any, list[str]]:
    """The (click) command the leading ``words`` name, and those words: ``reconcile`` for
    ``reconcile --export csv``. Typer may bring its own copy of click, so groups are
    recognised by their ``commands``."""
    command: Any = typer.main.get_command(app)
    path: list[str] = []
    for word in words:
        subcommands = getattr(command, "commands", None)
        if not isinstance(subcommands, dict) or word not in subcommands:
            break
        command = subcommands[word]
        path.append(word)
    return command, path


def run(args: list[str] | None = None) -> int:
    """Run one command; every way it can end is an exit code of the README's table, with
    one line on stderr when it could not run — never a traceback."""
    stdout = sys.stdout
    sys.stdout = ReaderMayLeave(stdout)
    try:
        return _run(args)
    finally:
        sys.stdout = stdout


# Commands that run until they are stopped, and stop on SIGTERM as their docs say (exit
# 0, their work finished): they handle the signal themselves.
_RUN_UNTIL_STOPPED = frozenset({"serve", "worker", "sandbox", "demo"})


@contextmanager
def _sigterm_interrupts(args: list[str] | None) -> Iterator[None]:
    """SIGTERM — what systemd, a container runtime or ``timeout`` sends — ends a one-shot
    command as Ctrl-C does: one line saying what was not finished, exit 130, and a
    ``reconcile`` run marked failed. Left to its default it killed the process without a
    word, and a run stayed ``running`` for good."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _, words = named_command(sys.argv[1:] if args is None else args)

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    # The console script took SIGTERM as an interruption while the commands loaded
    # (``pixrecon.entry``): a command that runs until stopped gets the default back.
    until_stopped = bool(words) and words[0] in _RUN_UNTIL_STOPPED
    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL if until_stopped else interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run(args: list[str] | None) -> int:
    try:
        _start_logging()
        with _sigterm_interrupts(args):
            code = app(args=args, prog_name="pixrecon", standalone_mode=False)
    except Interrupted as exc:
        say(str(exc), level="interrupted")
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:  # before or after Typer's own handling
        say(STOPPED, level="interrupted")
        return EXIT_INTERRUPTED
    except typer.TyperException as exc:  # click's usage errors: unknown option, bad value
        if type(exc).__name__ != "NoArgsIsHelpError":  # the help was printed instead
            # Click knows the command it was parsing, or only the group above it.
            known = getattr(getattr(exc, "ctx", None), "command_path", None) or "pixrecon"
            # For a usage error click raised before it knew which command it was parsing.
            _, words = named_command(sys.argv[1:] if args is None else args)
            named = " ".join(["pixrecon", *words])
            where = named if len(named) > len(known) else known
            said = exc.format_message().replace("Value error, ", "")
            # Click lists choices one a line, tab-indented: one line, as every failure.
            said = " ".join(said.split())
            say(f"{escape(said)} (see `{where} --help`)")
        return EXIT_COULD_NOT_RUN
    except typer.Abort:
        say("aborted")
        return EXIT_INTERRUPTED
    except SystemExit as exc:
        # A library's own exit — click's 1 for a closed stdout (`| head`) among them; 1
        # is reserved for "exceptions remain".
        if exc.code is None or exc.code == 0:
            return 0
        if not isinstance(exc.code, int):
            say(escape(str(exc.code)))
        return EXIT_COULD_NOT_RUN if exc.code != EXIT_INTERRUPTED else EXIT_INTERRUPTED
    except ValidationError as exc:
        if exc.title != Settings.__name__:
            return _crashed(exc)
        # A setting with a value it cannot take (read when a command starts).
        for line in setting_problems(exc):
            # Secrets and URLs' passwords are hidden already; the rest is configuration.
            say(line, personal=False)
        return EXIT_COULD_NOT_RUN
    except (StartupError, ProviderTlsError) as exc:
        say(escape(str(exc)))
        return EXIT_COULD_NOT_RUN
    except UNAVAILABLE_ERRORS as exc:
        say(escape(why_unavailable(_database_url(), exc)))
        return EXIT_COULD_NOT_RUN
    except OSError as exc:  # the environment: a file, a permission, an address
        say(one_line(exc))
        return EXIT_COULD_NOT_RUN
    except Exception as exc:
        return _crashed(exc)
    if code == EXIT_INTERRUPTED:
        # Typer turns a KeyboardInterrupt no command handled into a silent 130.
        say(STOPPED, level="interrupted")
    return code if isinstance(code, int) else 0


def _crashed(exc: Exception) -> int:
    # Never a traceback, and never 1 (which means "exceptions remain"): what broke, in one
    # line, and where the details are.
    log.debug("command_crashed", exc_info=exc)
    say(
        f"the command stopped on an unexpected error ({one_line(exc)}); "
        "PIXRECON_LOG_LEVEL=DEBUG shows where it happened"
    )
    return EXIT_COULD_NOT_RUN
