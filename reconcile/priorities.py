"""How urgent an exception is. Every exception is priority 2 but money near the last day it
can go back, which is 1: the nightly run judges that as of the day's end, and the lists
people work from judge it again as of today, so a case left open comes first as its last
day nears (``reconcile.cases``)."""

from __future__ import annotations

from datetime import date, timedelta

EXCEPTION_PRIORITY = 2
URGENT_PRIORITY = 1


def refund_priority(deadline: date, today: date, warning_days: int) -> int:
    """Money that may have to go back comes first from ``warning_days`` before its last
    day, and stays first once that day is past."""
    return URGENT_PRIORITY if deadline <= urgent_from(today, warning_days) else EXCEPTION_PRIORITY


def urgent_from(today: date, warning_days: int) -> date:
    """The latest refund deadline that is urgent on ``today``."""
    return today + timedelta(days=warning_days)
