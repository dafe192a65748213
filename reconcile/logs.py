"""Structured logs on stderr in one format — ours and the libraries' alike; every event
passes through the masking processor."""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog

from reconcile.masking import mask_text, mask_value

# Fields we set ourselves that never carry personal data (a request id is random hex and
# could otherwise be mistaken for a document number).
_NOT_PERSONAL = frozenset({"event", "request_id", "level", "timestamp", "route", "logger"})
# Names the fields of one event its caller vouches for: text that cannot hold personal data
# (a setting's value and what it must be), where a run of eleven digits is a number of
# days, not a CPF to mask.
NOT_PERSONAL = "not_personal"

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

# Libraries that narrate routine work at INFO: a scheduler's every tick, every HTTP request
# to the provider, every migration step. Above DEBUG only their warnings are worth a line.
_CHATTY = ("apscheduler", "httpx", "httpcore", "alembic")
# Loggers that uvicorn's default configuration gives handlers of their own.
_OWN_HANDLERS = ("uvicorn", "uvicorn.error", "uvicorn.access")

_state: dict[str, bool] = {}


class _BusyTick(logging.Filter):
    """APScheduler warns when a job's tick comes while its last run still goes on. Every
    job runs one at a time by design (``max_instances=1``, the tick merged into the next),
    so on a busy machine that warning is noise; at DEBUG it still shows."""

    def filter(self, record: logging.LogRecord) -> bool:
        busy = "maximum number of running instances reached" in str(record.msg)
        return not busy or logging.getLogger().isEnabledFor(logging.DEBUG)


_BUSY_TICK = _BusyTick()


def _mask_personal_data(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    vouched = frozenset(event_dict.pop(NOT_PERSONAL, ()))
    for key in list(event_dict):
        if key not in _NOT_PERSONAL and key not in vouched:
            event_dict[key] = mask_value(key, event_dict[key])
    return event_dict


def _mask_foreign_message(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    # A library's message is free text (a URL with a Pix key, say), not an event name.
    event_dict["event"] = mask_text(str(event_dict.get("event", "")))
    return event_dict


def json_enabled() -> bool:
    """Whether this process writes JSON log lines (so its diagnostics must be JSON too)."""
    return _state.get("json", False)


def _wants_json(json: bool | None, stream: TextIO) -> bool:
    if json is not None:
        return json
    if "json" in _state:
        # A forked worker process keeps its parent's choice, whatever its stderr became.
        return _state["json"]
    isatty = getattr(stream, "isatty", None)
    return not (callable(isatty) and isatty())


def configure_logging(
    level: str = "INFO", *, json: bool | None = None, stream: TextIO | None = None
) -> None:
    """Route structlog and the standard library's loggers through one handler on stderr.

    ``json=None`` means JSON unless stderr is a terminal (a person reads it there)."""
    out = stream or sys.stderr
    as_json = _wants_json(json, out)
    _state["json"] = as_json
    number = logging.getLevelName(level.upper())
    if not isinstance(number, int):
        number = logging.INFO
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: Any = structlog.processors.JSONRenderer()
    if not as_json:
        renderer = structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        wrapper_class=structlog.make_filtering_bound_logger(number),
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=False,
    )
    # One handler, one lock: a line from a library never lands inside one of ours.
    handler = logging.StreamHandler(out)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*shared, _mask_foreign_message],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                _mask_personal_data,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    for old in root.handlers[:]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(number)
    for name in _CHATTY:
        quiet = number if number <= logging.DEBUG else max(number, logging.WARNING)
        logging.getLogger(name).setLevel(quiet)
    scheduler = logging.getLogger("apscheduler.scheduler")
    if _BUSY_TICK not in scheduler.filters:
        scheduler.addFilter(_BUSY_TICK)
    for name in _OWN_HANDLERS:
        # Left over from a library's own logging set-up: plain text beside our lines.
        library = logging.getLogger(name)
        library.handlers.clear()
        library.propagate = True
        library.setLevel(logging.NOTSET)
    # warnings.warn and exceptions escaping a thread would otherwise print raw text.
    logging.captureWarnings(True)
    threading.excepthook = _log_thread_crash


def _log_thread_crash(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit:
        return
    name = args.thread.name if args.thread is not None else "?"
    structlog.get_logger("threads").error(
        "thread_crashed",
        thread=name,
        exc_info=(args.exc_type, args.exc_value, args.exc_traceback),
    )


# Until the process configures logging, still mask, and still keep stdout for output: a
# library user or a test that never calls configure_logging must not print personal data.
structlog.configure(
    processors=[
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        _mask_personal_data,
        structlog.dev.ConsoleRenderer(colors=False),
    ],
    logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
)


def get_logger(name: str) -> structlog.typing.FilteringBoundLogger:
    logger: structlog.typing.FilteringBoundLogger = structlog.get_logger(name)
    return logger
