"""What every command shares: the consoles, one way to fail (one line, exit code 2), the
``--format`` choice, ports, progress, and opening the database or exiting cleanly."""

from __future__ import annotations

import calendar
import errno
import os
import re
import socket
from collections.abc import Callable, Sequence
from datetime import date, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from pydantic import AliasChoices, ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.text import Text
from sqlalchemy import Engine

from pixrecon.bootstrap import StartupError, open_database
from reconcile.logs import NOT_PERSONAL, get_logger, json_enabled
from reconcile.provider.errors import AuthenticationFailed, Forbidden
from reconcile.settings import Settings
from reconcile.timeutil import BUSINESS_TZ

console = Console()
# A diagnostic is one line however narrow the terminal (rich wraps at 80 columns otherwise).
err = Console(stderr=True, soft_wrap=True)
log = get_logger("pixrecon")

# Exit codes (README): 0 ok; 1 only for "exceptions remain" (``pixrecon reconcile``);
# 2 whenever a command could not do what it was asked.
EXIT_COULD_NOT_RUN = 2
EXIT_INTERRUPTED = 130


class OutputFormat(StrEnum):
    table = "table"
    json = "json"


FormatOption = Annotated[
    OutputFormat, typer.Option("--format", "-f", help="table for people, json for programs")
]
PortOption = Annotated[int, typer.Option(min=1, max=65535, help="port to listen on")]


def one_line(exc: BaseException) -> str:
    """An error as one line a person can act on: its kind and the first line of what it
    says (drivers add lines of background a terminal does not need)."""
    said = str(exc).strip().splitlines()
    return escape(f"{type(exc).__name__}: {said[0] if said else ''}")


Level = Literal["error", "warning", "interrupted"]
_LABELS: dict[Level, str] = {
    "error": "[bold red]error:[/]",
    "warning": "[bold yellow]warning:[/]",
    "interrupted": "[bold yellow]interrupted:[/]",
}


def say(message: str, level: Level = "error", *, personal: bool = True) -> None:
    """A diagnostic on stderr (``message`` is rich markup). Where stderr carries JSON logs
    it is a log event too, so that every line there parses, its personal data masked as in
    every log line; ``personal=False`` for a message that cannot carry any (a setting's
    value), shown there as on a terminal."""
    if json_enabled():
        plain = Text.from_markup(message).plain
        vouched = {} if personal else {NOT_PERSONAL: ("message",)}
        if level == "error":
            log.error("command_failed", message=plain, **vouched)
        elif level == "interrupted":
            log.warning("command_interrupted", message=plain, **vouched)
        else:
            log.warning("command_warning", message=plain, **vouched)
        return
    err.print(f"{_LABELS[level]} {message}")


def fail(message: str, code: int = EXIT_COULD_NOT_RUN) -> typer.Exit:
    """Say what is wrong on stderr; the caller raises the returned ``Exit``."""
    say(message)
    return typer.Exit(code)


# Ids are BIGINT columns: a larger number is no row, and asked for it would make the
# database refuse the query itself (an "unexpected error" instead of "no such row").
MAX_ID = 2**63 - 1


def known_id(what: str) -> Callable[[int | None], int | None]:
    """An id argument's check: beyond what a row can have, "no {what} N" as for any
    id that does not exist."""

    def check(value: int | None) -> int | None:
        if value is not None and not 0 < value <= MAX_ID:
            raise fail(f"no {what} {value}")
        return value

    return check


def at_most_max_id(value: int | None) -> int | None:
    """``--limit``: any count beyond the largest id selects everything."""
    return None if value is None else min(value, MAX_ID)


class Interrupted(Exception):
    """Ctrl-C, turned into what a command could not finish (rich markup). Typer would
    swallow a ``KeyboardInterrupt`` into a silent 130; ``pixrecon.cli.run`` says this."""


# Python's date.fromisoformat also takes 20261122 and 2026-W47-7; the documented form is
# the only one accepted, so that a typo is never read as some other day.
_ISO_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


_MONTHS = (
    *("January", "February", "March", "April", "May", "June", "July", "August"),
    *("September", "October", "November", "December"),
)


def _why_not_a_day(iso_day: str) -> str:
    """Why a YYYY-MM-DD that the calendar has no day for is none (``2026-02-30``): its
    form is right, so saying "must be YYYY-MM-DD" would send people after the wrong fault."""
    year, month, day = int(iso_day[:4]), int(iso_day[5:7]), int(iso_day[8:10])
    if not 1 <= month <= 12:
        return f"there is no month {month:02d}"
    if year == 0:
        return "there is no year 0000"
    if day == 0:
        return "days are numbered from 01"
    return f"{_MONTHS[month - 1]} {year} has {calendar.monthrange(year, month)[1]} days"


def day_option(raw: str, option: str = "--date") -> date:
    """A business day given as YYYY-MM-DD, or the command fails naming ``option``."""
    if not _ISO_DAY.fullmatch(raw):
        raise fail(f"{option} must be YYYY-MM-DD, got {escape(repr(raw))}")
    try:
        day = date.fromisoformat(raw)
    except ValueError:
        raise fail(f"{option} {escape(repr(raw))} is not a day ({_why_not_a_day(raw)})") from None
    if not FIRST_DAY <= day <= LAST_DAY:
        # A day's window, with the margins read around it, must be a time Python can hold.
        raise fail(
            f"{option} {day.isoformat()} is outside the days pixrecon handles "
            f"({FIRST_DAY.isoformat()} to {LAST_DAY.isoformat()})"
        )
    return day


FIRST_DAY = date(1900, 1, 1)
LAST_DAY = date(9998, 12, 31)


def is_iso_day_prefixed(raw: str) -> bool:
    """Whether ``raw`` starts with a YYYY-MM-DD day (followed by nothing, T or a space)."""
    return bool(_ISO_DAY.match(raw)) and raw[10:11] in ("", "T", " ")


def moment_option(raw: str, option: str) -> datetime:
    """A time given on the command line: YYYY-MM-DD[THH:MM[:SS]] with an optional offset
    (``Z``, ``-03:00``); without one it is São Paulo time, as every time shown is."""
    problem = (
        f"{option} {escape(repr(raw))} is not a date or time like 2026-11-22T14:30 "
        "(São Paulo time unless an offset such as Z or -03:00 follows)"
    )
    if not is_iso_day_prefixed(raw):
        raise fail(problem)
    try:
        date.fromisoformat(raw[:10])
    except ValueError:
        raise fail(
            f"{option} {escape(repr(raw))} is not a day ({_why_not_a_day(raw[:10])})"
        ) from None
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise fail(problem) from None
    if not FIRST_DAY <= moment.date() <= LAST_DAY:
        # As for a day: a time Python cannot hold once in UTC (9999-12-31T23:00 in São
        # Paulo) would end the command in an unexpected error.
        raise fail(
            f"{option} {escape(repr(raw))} is outside the times pixrecon handles "
            f"({FIRST_DAY.isoformat()} to {LAST_DAY.isoformat()})"
        )
    return moment if moment.tzinfo else moment.replace(tzinfo=BUSINESS_TZ)


def cannot_write(path: Path, exc: OSError | None = None) -> str:
    """Why ``path`` cannot be written and what to do, as ``cannot write PATH: …`` (rich
    markup). Without ``exc``, what can be told before trying; empty when nothing is."""
    number = exc.errno if exc is not None else _foreseen(path)
    if number is None:
        return ""
    if path.is_dir():
        why = f"it is a folder: name a file, e.g. {escape(str(path / 'NAME'))}"
    elif number in (errno.ENOENT, errno.ENOTDIR) and _a_file_in_the_way(path.parent):
        why = (
            f"{escape(str(_a_file_in_the_way(path.parent)))} is a file, not a folder: name a "
            "file in a folder"
        )
    elif number == errno.ENOENT and not path.parent.is_dir():
        why = (
            f"the folder {escape(str(path.parent))} does not exist: create it, or name a "
            "file in a folder that does"
        )
    elif number == errno.ENOENT:
        # The folder is there, but takes no new file (``/proc``, a vanished mount).
        why = (
            f"no file can be created in {escape(str(path.parent))}: name a file in a "
            "folder of your own"
        )
    elif number == errno.EROFS:
        why = "the file system is read-only: name a file on a writable one"
    elif number in (errno.EACCES, errno.EPERM):
        why = "permission denied: name a file in a folder you may write to"
    elif number == errno.ENOSPC:
        why = "no space left on the device: free some, or name a file on another one"
    elif exc is not None and exc.strerror:
        why = escape(exc.strerror)
    else:
        why = one_line(exc) if exc is not None else escape(os.strerror(number))
    return f"cannot write {escape(str(path))}: {why}"


def writable_or_exit(path: Path) -> None:
    """Refuse, before any work, a path that can be seen not to take a file."""
    problem = cannot_write(path)
    if problem:
        raise fail(problem)


def _a_file_in_the_way(folder: Path) -> Path | None:
    """The nearest of ``folder`` and its parents that exists as something else than a
    folder: ``/etc/hostname`` of ``/etc/hostname/x.csv``."""
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            return None if candidate.is_dir() else candidate
    return None


def _foreseen(path: Path) -> int | None:
    # Checked before a long run (a reconciliation that fetches for minutes), so that its
    # result is not lost to a path that could never have been written.
    if path.is_dir():
        return errno.EISDIR
    folder = path.parent
    if not folder.is_dir():
        return errno.ENOENT
    if os.statvfs(folder).f_flag & os.ST_RDONLY:
        return errno.EROFS
    if not os.access(path if path.exists() else folder, os.W_OK):
        return errno.EACCES
    if path.exists() and not path.is_file():
        return None  # a named pipe or a device: written into as it is
    # What the permission bits cannot tell (``/proc`` takes no new file even from root):
    # the file the export is written to first, created and removed.
    probe = Path(os.path.realpath(path)).with_name(path.name + ".partial")
    try:
        handle = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return None
    except OSError as exc:
        return exc.errno
    os.close(handle)
    probe.unlink(missing_ok=True)
    return None


def progress(*, transient: bool = True) -> Progress:
    """A spinner on stderr for a person at a terminal; none where stderr is a JSON log
    stream or a pipe, where a frame of it would only be noise in a log file."""
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    disable = json_enabled() or not err.is_terminal
    return Progress(*columns, console=err, transient=transient, disable=disable)


def database_or_exit(settings: Settings, *, auto_upgrade: bool) -> Engine:
    """The database, checked. ``auto_upgrade`` only for the commands that own the
    embedded schema (``serve``, ``demo``): for every other command a SQLite file that does
    not exist is an error, never a new empty database."""
    try:
        return open_database(settings, auto_upgrade=auto_upgrade)
    except StartupError as exc:
        raise fail(escape(str(exc))) from None


def listen_or_exit(
    host: str,
    port: int,
    *,
    remedy: str = "choose another --port",
    host_option: str = "--host",
) -> socket.socket:
    """The listening address, taken before any work is done (a port in use is found
    now, not after migrations and worker threads have started). ``remedy`` says how to
    choose another port, ``host_option`` where the address was given."""
    if not host.strip():
        # The socket would take it for every interface: a choice to make explicitly.
        raise fail(
            f"{host_option} is empty: give the address to listen on (0.0.0.0 for every "
            "interface, 127.0.0.1 for this machine only)"
        )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            why = f"port {port} is already in use on {host}: stop what listens there, or "
            raise fail(escape(why) + remedy) from None
        if exc.errno == errno.EACCES:
            why = f"not allowed to listen on port {port} (ports below 1024 need privileges): "
            raise fail(escape(why) + remedy) from None
        if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
            raise fail(
                f"{escape(host)} is not an address of this machine: set {host_option} to "
                "127.0.0.1, or 0.0.0.0 for every interface"
            ) from None
        raise fail(f"cannot listen on {escape(host)}:{port}: {one_line(exc)}") from None
    return sock


def broker_or_exit(settings: Settings, *, reachable: bool) -> None:
    """A broker URL that names Redis (and, with ``reachable``, a Redis that answers)."""
    import redis

    url = settings.broker_url or ""
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=2)
    except ValueError:
        raise fail(
            f"PIXRECON_BROKER_URL={escape(repr(url))}: not a Redis URL; expected "
            "redis://HOST:PORT/DB (or unset it for the in-process broker)"
        ) from None
    if not reachable:
        return
    try:
        client.ping()
    except redis.RedisError as exc:
        raise fail(
            f"cannot reach the broker at PIXRECON_BROKER_URL ({one_line(exc)}): check the "
            "URL and that Redis is running"
        ) from None
    finally:
        client.close()


# What pydantic's messages leave implicit about the expected form of a value.
_EXPECTED = {"bool_parsing": "use 1 or 0 (true/false, yes/no, on/off)"}


def _setting_name(loc: Sequence[Any]) -> str:
    key = str(loc[0]) if loc else "?"
    if not key.upper().startswith("PIXRECON_"):
        return f"PIXRECON_{key.upper()}"
    # A renamed setting: name the variable this environment actually set.
    for field in Settings.model_fields.values():
        alias = field.validation_alias
        if isinstance(alias, AliasChoices) and key in alias.choices:
            set_here = [str(c) for c in alias.choices if str(c) in os.environ]
            return set_here[0] if set_here else key
    return key


def setting_problems(exc: ValidationError) -> list[str]:
    """One line per setting that cannot be read: the variable, its value, what it must be."""
    lines = []
    for problem in exc.errors():
        hint = _EXPECTED.get(problem["type"])
        said = problem["msg"].removeprefix("Value error, ") + (f"; {hint}" if hint else "")
        name = _setting_name(problem["loc"])
        if problem["type"] == "setting_missing":  # no value to show: its absence is the error
            lines.append(f"{name} is {escape(said)}")
            continue
        value = _shown_value(name, problem.get("input"))
        lines.append(f"{name}={escape(value)}: {escape(said)}")
    return lines


# Settings whose value must never reach a terminal, a log or a CI transcript, even when it
# is wrong: a short secret is still the secret in use somewhere.
_SECRET_WORDS = ("SECRET", "PASSWORD", "TOKEN", "USERS", "KEY")


# The password of a URL (``redis://:PASSWORD@host``, ``postgresql://user:PASSWORD@host``).
_URL_PASSWORD = re.compile(r"://([^:/@\s]*):\S*@")


def _shown_value(name: str, value: object) -> str:
    """The value as given, but a secret's and a URL's password: any other value (a number
    of days, a path, a host) is no secret, and shown whole to be recognised and fixed."""
    # ``PIXRECON_WEBHOOK_SECRET_HEADER`` names where the secret travels, not the secret.
    secret = not name.upper().endswith("_HEADER")
    if secret and any(word in name.upper() for word in _SECRET_WORDS):
        size = len(value) if isinstance(value, str) else None
        return f"(hidden, {size} characters)" if size is not None else "(hidden)"
    if isinstance(value, str):
        return repr(_URL_PASSWORD.sub(r"://\1:***@", value))
    return repr(value)


def provider_advice(exc: BaseException, settings: Settings) -> str:
    """What to do about a provider's failure: a refusal of the credentials or of a
    permission is not cured by running again, so it names what to check instead."""
    if isinstance(exc, AuthenticationFailed):
        configured = [
            family
            for family, url, client in (
                ("QRCODE", settings.qrcode_api_url, settings.qrcode_client_id),
                ("ACCOUNTS", settings.accounts_api_url, settings.accounts_client_id),
            )
            if url and client
        ]
        # The API that refused, where its client said which: the other's credentials
        # were not what failed, and naming them sends people after the wrong secret.
        refused = (exc.api or "").upper()
        if refused in configured:
            configured = [refused]
        names = [
            f"PIXRECON_{family}_CLIENT_ID and PIXRECON_{family}_CLIENT_SECRET"
            for family in configured
        ]
        return (
            "the provider refused pixrecon's credentials: check "
            + (" and ".join(names) or "the provider's client id and secret")
            + " (and the client certificate, where the provider asks for mutual TLS)"
        )
    if isinstance(exc, Forbidden):
        return (
            "the provider's credentials lack a permission or a scope this call needs: ask "
            "the provider to grant it to pixrecon's client"
        )
    return "run it again once the provider answers"


def own_metrics_or_exit(command: str) -> None:
    """``PROMETHEUS_MULTIPROC_DIR`` is the worker's: set for a process that serves its own
    ``/metrics`` (the receiver, the demo), it turns prometheus_client's counters into
    files in that folder, which fails at the first metric where the folder is missing and
    mixes the receiver's counters into the worker's where it exists."""
    for name in ("PROMETHEUS_MULTIPROC_DIR", "prometheus_multiproc_dir"):
        if os.environ.get(name):
            raise fail(
                f"{name} is set, but it is a setting of `pixrecon worker` only: unset it for "
                f"`pixrecon {command}`, which serves its own metrics (set it in the worker's "
                "environment, as docs/deploy.md's worker unit does)"
            )
