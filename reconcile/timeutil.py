"""UTC storage and lenient parsing of the provider's timestamps."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

BUSINESS_TZ = ZoneInfo("America/Sao_Paulo")


def utcnow() -> datetime:
    return datetime.now(UTC)


def business_today() -> date:
    """Today's date in São Paulo, where the business day is counted."""
    return utcnow().astimezone(BUSINESS_TZ).date()


def next_weekday(day: date) -> date:
    """``day``, or the Monday after it when it is a Saturday or a Sunday: where the BCB
    moves a date that falls on a day without banking. Holidays move it too, but the
    project knows no holiday calendar, so only weekends are counted as such."""
    weekday = day.weekday()
    return day + timedelta(days=7 - weekday) if weekday >= 5 else day


def parse_timestamp(raw: object) -> datetime | None:
    """RFC 3339 with any offset → aware UTC; ``None`` when it cannot be read.

    The BCB spec's own examples contain impossible dates, so a bad timestamp is a fact to
    keep (the caller stores the raw text), not a reason to reject the notification.
    """
    if not isinstance(raw, str) or not raw.strip():
        return None
    text = raw.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        # The BCB API speaks UTC when no offset is given.
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # year 1 with a positive offset: before the first instant
        return None


def as_utc(value: datetime) -> datetime:
    """Databases without time zones (SQLite) hand back naive values that are UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def business_day_bounds(day: date) -> tuple[datetime, datetime]:
    """[start, end) of a business day in America/Sao_Paulo, as UTC instants."""
    start = datetime.combine(day, time.min, tzinfo=BUSINESS_TZ)
    end = datetime.combine(date.fromordinal(day.toordinal() + 1), time.min, tzinfo=BUSINESS_TZ)
    return start.astimezone(UTC), end.astimezone(UTC)
