"""Pure pieces of the boundary: ``Retry-After`` parsing and backoff bounds."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from reconcile.provider.responses import parse_retry_after
from reconcile.provider.retry import RetryPolicy

NOW = datetime(2024, 6, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("0", 0.0),
        ("7", 7.0),
        ("1.5", 1.5),
        ("Sat, 01 Jun 2024 12:00:30 GMT", 30.0),
        ("Sat, 01 Jun 2024 11:00:00 GMT", 0.0),  # already past
        ("-3", 0.0),
        ("soon", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_retry_after(header: str | None, seconds: float | None) -> None:
    assert parse_retry_after(header, now=NOW) == seconds


def test_backoff_is_bounded_and_gives_up() -> None:
    policy = RetryPolicy(max_attempts=6, base_delay=1, max_delay=4, rng=random.Random(1))
    delays = [policy.delay(failures, None) for failures in range(1, 7)]
    for delay, ceiling in zip(delays[:5], (1, 2, 4, 4, 4), strict=True):
        assert delay is not None
        assert ceiling / 2 <= delay <= ceiling
    assert delays[5] is None


def test_retry_after_wins_over_backoff_up_to_a_limit() -> None:
    policy = RetryPolicy(max_retry_after=30)
    assert policy.delay(1, 12.0) == 12.0
    assert policy.delay(1, 31.0) is None
