"""The console script's first frame: importing the commands takes a second or two, and a
Ctrl-C in that time must end like any other (one line, exit 130), not in a traceback.
Only the standard library is imported before the guard."""

from __future__ import annotations

import json
import os
import signal
import sys
from datetime import UTC, datetime

EXIT_INTERRUPTED = 130
STARTING = "pixrecon was interrupted while starting (Ctrl-C or SIGTERM): nothing was done"


def _wants_json() -> bool:
    # The rule of reconcile.logs, read without importing it.
    raw = os.environ.get("PIXRECON_LOG_JSON", "").strip().lower()
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    return not sys.stderr.isatty()


def _interrupted_while_starting() -> None:
    if _wants_json():
        event = {
            "message": STARTING,
            "event": "command_interrupted",
            "level": "warning",
            "logger": "pixrecon",
            "timestamp": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        }
        sys.stderr.write(json.dumps(event) + "\n")
    else:
        sys.stderr.write(f"interrupted: {STARTING}\n")


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def main() -> None:
    # SIGTERM (systemd's stop, ``timeout``) while the commands load ends as Ctrl-C does;
    # ``pixrecon.cli`` keeps it so for one-shot commands and gives it back to those that
    # run until stopped, which handle it themselves.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        from pixrecon.cli import run
    except KeyboardInterrupt:
        _interrupted_while_starting()
        raise SystemExit(EXIT_INTERRUPTED) from None
    code = run()
    # Done, and said so: a Ctrl-C while the interpreter shuts down would end the process
    # by the signal, without a word, and hide the exit code the command chose.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise SystemExit(code)
