"""When to try a failed provider call again, and how long to wait first."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff with jitter that defers to the server's ``Retry-After``.

    A ``Retry-After`` longer than ``max_retry_after`` is not slept on inside the call: the
    ``ProviderUnavailable`` (carrying ``retry_after``) goes up, so a Dramatiq actor can
    come back later instead of pinning a worker thread.

    ``budget``: seconds one call may spend waiting between its attempts, however many they
    are — what the nightly run and the periodic jobs get (``from_settings``), so that
    minutes of throttling are ridden out rather than failing the day after three tries.
    """

    max_attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 30.0
    budget: float | None = None
    sleep: Callable[[float], None] = time.sleep
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")

    @classmethod
    def within(
        cls, budget: float, *, max_delay: float = 30.0, max_retry_after: float = 120.0
    ) -> RetryPolicy:
        """Retry for as long as ``budget`` seconds of waiting allow."""
        return cls(
            max_attempts=1_000_000,
            max_delay=max_delay,
            max_retry_after=max_retry_after,
            budget=budget,
        )

    def delay(self, failures: int, retry_after: float | None, waited: float = 0.0) -> float | None:
        """Seconds to wait after the ``failures``-th failed attempt, ``waited`` seconds
        having been waited already; ``None`` to give up."""
        if failures >= self.max_attempts:
            return None
        if retry_after is not None and retry_after > self.max_retry_after:
            return None
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** (failures - 1))
        # "Equal jitter": never less than half the backoff, so retries do not bunch up at 0.
        backoff = ceiling / 2 + self.rng.uniform(0, ceiling / 2)
        if retry_after is None:
            wait = backoff
        elif self.budget is None:
            wait = retry_after
        else:
            # Retry-After is the least to wait; within a budget the backoff still grows,
            # or a server answering "Retry-After: 0" would be asked again and again.
            wait = max(retry_after, backoff)
        if self.budget is not None and waited + wait > self.budget:
            return None
        return wait


NO_RETRY = RetryPolicy(max_attempts=1)
