"""A sandbox clock that a scenario moves through its business day.

While the day is applied, the clock is pinned to each event's instant, so everything the
provider stamps (``horario``, ``createdAt``, refund settlement, MED debits) lands at the
scenario's time of day. Afterwards it is released and follows real time again, but never
goes back before the last pinned instant: a day scripted later than now keeps its clock
at the end of that day instead of stamping new things in its past.
"""

from __future__ import annotations

import threading
from datetime import datetime

from sandbox.clock import Clock, utcnow


class ScenarioClock:
    def __init__(self, real: Clock = utcnow) -> None:
        self._lock = threading.Lock()
        self._real = real
        self._pinned: datetime | None = None
        self._floor: datetime | None = None

    def __call__(self) -> datetime:
        with self._lock:
            if self._pinned is not None:
                return self._pinned
            now = self._real()
            return now if self._floor is None else max(now, self._floor)

    @property
    def pinned(self) -> bool:
        with self._lock:
            return self._pinned is not None

    def pin(self, at: datetime) -> None:
        if at.tzinfo is None:
            raise ValueError("the scenario clock takes aware instants")
        with self._lock:
            self._pinned = at
            self._floor = at if self._floor is None else max(self._floor, at)

    def release(self) -> None:
        with self._lock:
            self._pinned = None
