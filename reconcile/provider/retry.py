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
    """

    max_attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 30.0
    sleep: Callable[[float], None] = time.sleep
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")

    def delay(self, failures: int, retry_after: float | None) -> float | None:
        """Seconds to wait after the ``failures``-th failed attempt; ``None`` to give up."""
        if failures >= self.max_attempts:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_retry_after else None
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** (failures - 1))
        # "Equal jitter": never less than half the backoff, so retries do not bunch up at 0.
        return ceiling / 2 + self.rng.uniform(0, ceiling / 2)


NO_RETRY = RetryPolicy(max_attempts=1)
