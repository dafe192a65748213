"""Structured JSON logs; every event passes through the masking processor."""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog

from reconcile.masking import mask_value

# Fields we set ourselves that never carry personal data (a request id is random hex and
# could otherwise be mistaken for a document number).
_NOT_PERSONAL = frozenset({"event", "request_id", "level", "timestamp", "route", "logger"})


def _mask_personal_data(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    for key in list(event_dict):
        if key not in _NOT_PERSONAL:
            event_dict[key] = mask_value(key, event_dict[key])
    return event_dict


def configure_logging(
    level: str = "INFO", *, json: bool = True, stream: TextIO | None = None
) -> None:
    renderer: Any = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
        _mask_personal_data,
        renderer,
    ]
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=stream or sys.stderr),
        cache_logger_on_first_use=False,
    )
    # Libraries log through the standard library; route them to stderr at the same level.
    logging.basicConfig(
        level=level.upper(), stream=sys.stderr, format="%(levelname)s %(name)s %(message)s"
    )


# Until the process configures logging, still mask: a library user or a test that never
# calls configure_logging must not print personal data either.
structlog.configure(
    processors=[
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        _mask_personal_data,
        structlog.dev.ConsoleRenderer(colors=False),
    ]
)


def get_logger(name: str) -> structlog.typing.FilteringBoundLogger:
    logger: structlog.typing.FilteringBoundLogger = structlog.get_logger(name)
    return logger
