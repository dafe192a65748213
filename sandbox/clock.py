"""UTC time: the sandbox's clock and the RFC 3339 text the QR code API speaks."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    return datetime.now(UTC)


def to_millis(value: datetime) -> datetime:
    """Aware UTC, truncated to milliseconds.

    The API renders ``horario`` with millisecond precision; keeping the stored instant at
    the same precision makes ``inicio``/``fim`` filters agree with what clients see.
    """
    if value.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    utc = value.astimezone(UTC)
    return utc.replace(microsecond=utc.microsecond // 1000 * 1000)


def format_rfc3339(value: datetime) -> str:
    return to_millis(value).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_rfc3339(text: str) -> datetime | None:
    """Strict RFC 3339: a date, a time and an offset; ``None`` otherwise."""
    if "T" not in text.upper():
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    return parsed.astimezone(UTC)
