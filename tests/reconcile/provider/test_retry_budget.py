"""The retry budget is wall-clock time: a provider that accepts connections and never
answers cannot hold one call for a timeout per attempt on top of the budget."""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Iterator

import pytest

from reconcile.provider import ProviderUnavailable, QrCodeApi, RetryPolicy

ATTEMPT_TIMEOUT = 1.0
BUDGET = 3.0


@pytest.fixture
def silent_provider() -> Iterator[str]:
    """A port whose kernel completes every connection (the backlog) but that never reads
    nor answers: each attempt waits its whole timeout."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_a_silent_provider_is_given_up_on_within_the_budget(silent_provider: str) -> None:
    retry = RetryPolicy(max_attempts=1_000_000, budget=BUDGET, rng=random.Random(0))
    with QrCodeApi(silent_provider, "id", "secret", timeout=ATTEMPT_TIMEOUT, retry=retry) as api:
        began = time.monotonic()
        with pytest.raises(ProviderUnavailable) as caught:
            api.get_pix("E00000000202401010000aaaaaaaaaaa")
        took = time.monotonic() - began
    # Counting only the sleeps, this took about twice the budget: four or five attempts
    # of a whole timeout each, besides the waits between them.
    assert took < BUDGET + ATTEMPT_TIMEOUT, took
    assert caught.value.attempts is not None
    assert caught.value.attempts >= 2
    assert caught.value.elapsed is not None
    assert caught.value.elapsed <= took


def test_no_retry_begins_once_the_budget_is_spent() -> None:
    policy = RetryPolicy(max_attempts=100, base_delay=1, max_delay=1, budget=10)
    assert policy.delay(1, None, elapsed=5) is not None
    # Half a second or more of backoff from 9.6 s would start past the budget.
    assert policy.delay(1, None, elapsed=9.6) is None
    assert policy.delay(1, None, elapsed=10) is None
    assert policy.left(7.5) == 2.5
    assert RetryPolicy().left(7.5) is None
