"""Human output in Brazilian conventions: money as ``R$ 1.234,56``, dates as
``22/11/2026`` and times in America/Sao_Paulo. JSON output keeps centavos and ISO 8601."""

from __future__ import annotations

from datetime import date, datetime

from reconcile.timeutil import BUSINESS_TZ, as_utc


def brl(cents: int | None) -> str:
    """``R$ 1.234,56``; ``—`` when unknown; a minus sign before the currency."""
    if cents is None:
        return "—"
    sign = "-" if cents < 0 else ""
    reais, centavos = divmod(abs(cents), 100)
    grouped = f"{reais:,}".replace(",", ".")
    return f"{sign}R$ {grouped},{centavos:02d}"


def count(n: int | None) -> str:
    """A count with a dot between thousands, ``1.234``; ``—`` when unknown."""
    return "—" if n is None else f"{n:,}".replace(",", ".")


def br_date(value: date | str | None) -> str:
    if value is None:
        return "—"
    day = date.fromisoformat(value) if isinstance(value, str) else value
    # Not strftime: glibc does not pad a year before 1000 ("01/01/1").
    return f"{day.day:02d}/{day.month:02d}/{day.year:04d}"


def sp_time(value: datetime | str | None, *, seconds: bool = False) -> str:
    """An instant as São Paulo wall-clock time, ``22/11/2026 23:59`` (``23:59:07`` with
    ``seconds``: many inbox items arrive within one minute, and the second tells them
    apart)."""
    if value is None:
        return "—"
    instant = datetime.fromisoformat(value) if isinstance(value, str) else value
    layout = "%d/%m/%Y %H:%M:%S" if seconds else "%d/%m/%Y %H:%M"
    return as_utc(instant).astimezone(BUSINESS_TZ).strftime(layout)


# Above each bound, the next unit: the figure stays a few digits long whatever the lag.
_DURATION_UNITS = ((120.0, 1.0, "s"), (2 * 3600.0, 60.0, "min"), (2 * 86400.0, 3600.0, "h"))


def duration_unit(seconds: float) -> tuple[float, str]:
    """The unit to show ``seconds`` in, as its length in seconds and its name."""
    for bound, unit, name in _DURATION_UNITS:
        if seconds < bound:
            return unit, name
    return 86400.0, "days"


def duration(seconds: float | None) -> str:
    """``1,5 s``, ``12,4 min``, ``5,1 h``, ``268 days``; ``—`` when unknown."""
    if seconds is None:
        return "—"
    unit, name = duration_unit(seconds)
    value = seconds / unit
    shown = f"{value:,.0f}" if name == "days" else f"{value:,.1f}"
    return f"{shown.replace(',', '_').replace('.', ',').replace('_', '.')} {name}"
