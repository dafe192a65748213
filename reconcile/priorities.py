"""How urgent an exception is. Every exception is priority 2 but money near the last day it
can go back, and an open MED case near the provider's analysis deadline, which are 1: the
nightly run judges that as of the day's end, and the lists people work from judge it again
as of today, so a case left open comes first as its last day nears (``reconcile.cases``)."""

from __future__ import annotations

from datetime import date, datetime, timedelta

from reconcile.timeutil import business_day_bounds

EXCEPTION_PRIORITY = 2
URGENT_PRIORITY = 1


def refund_priority(deadline: date, today: date, warning_days: int) -> int:
    """Money that may have to go back comes first from ``warning_days`` before its last
    day, and stays first once that day is past."""
    return URGENT_PRIORITY if deadline <= urgent_from(today, warning_days) else EXCEPTION_PRIORITY


def urgent_from(today: date, warning_days: int) -> date:
    """The latest refund deadline that is urgent on ``today``."""
    return today + timedelta(days=warning_days)


MED_WARNING_DAYS = 2
"""A MED case is answered within days of opening (seven, when the provider states no
deadline): the refund warning's ten days would make every open case urgent from its
first day, and none would stand out as its own deadline came."""


def med_urgent_before(day: date) -> datetime:
    """An open MED case whose analysis deadline falls before this instant is urgent on
    ``day``: due that day or within the ``MED_WARNING_DAYS`` after it (São Paulo days),
    or already past."""
    return business_day_bounds(day + timedelta(days=MED_WARNING_DAYS))[1]
