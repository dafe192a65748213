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

    ``budget``: seconds of wall-clock time (on ``clock``) within which one call may retry,
    counted from the start of its first attempt, however many attempts there are — what
    the nightly run and the periodic jobs get (``from_settings``), so that minutes of
    throttling are ridden out rather than failing the day after three tries. No retry
    begins once it is spent, and a retry waits for its answer no longer than what is left
    (the transport), so a call ends within the budget, or within its first attempt's
    timeout when that is longer. Counting only the waits between attempts let a provider
    that never answers hold a call for a timeout per attempt on top of them: many times
    the budget.
    """

    max_attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 30.0
    budget: float | None = None
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")

    @classmethod
    def within(
        cls, budget: float, *, max_delay: float = 30.0, max_retry_after: float = 120.0
    ) -> RetryPolicy:
        """Retry for as long as ``budget`` seconds from the first attempt allow."""
        return cls(
            max_attempts=1_000_000,
            max_delay=max_delay,
            max_retry_after=max_retry_after,
            budget=budget,
        )

    def delay(self, failures: int, retry_after: float | None, elapsed: float = 0.0) -> float | None:
        """Seconds to wait after the ``failures``-th failed attempt, ``elapsed`` seconds
        after the first attempt began; ``None`` to give up."""
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
        # A retry that would only begin when the budget is spent could not end within it.
        if self.budget is not None and elapsed + wait >= self.budget:
            return None
        return wait

    def left(self, elapsed: float) -> float | None:
        """Seconds of the budget left ``elapsed`` seconds into a call; ``None`` without one."""
        return None if self.budget is None else self.budget - elapsed


NO_RETRY = RetryPolicy(max_attempts=1)
