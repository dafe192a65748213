"""A broker outage seen from the dispatcher: sends back off instead of being tried on every
commit, the outage is logged when it starts, now and then while it lasts and when it
ends, and every item not sent is counted (the sweeper sends it later)."""

from __future__ import annotations

from collections.abc import Sequence

from prometheus_client import REGISTRY
from structlog.testing import capture_logs

from worker.dispatch import BrokerState, Dispatcher


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FlakyActors:
    """Stands in for the actors' ``send_items``: the broker is up or down at will."""

    def __init__(self) -> None:
        self.up = True
        self.attempts = 0
        self.sent: list[int] = []

    def send_items(self, item_ids: Sequence[int]) -> None:
        self.attempts += 1
        if not self.up:
            raise ConnectionError("Redis is gone")
        self.sent.extend(item_ids)


def failed_count(origin: str) -> float:
    labels = {"origin": origin, "outcome": "failed"}
    return REGISTRY.get_sample_value("pixrecon_dispatch_total", labels) or 0.0


def test_an_outage_backs_off_logs_each_change_of_state_and_counts_what_was_not_sent() -> None:
    clock = Clock()
    actors = FlakyActors()
    state = BrokerState(first_backoff=1, max_backoff=8, remind_every=60, clock=clock)
    dispatcher = Dispatcher(actors, state)  # type: ignore[arg-type]
    before = failed_count("test")

    with capture_logs() as logs:
        assert dispatcher.dispatch([1, 2], origin="test")
        actors.up = False
        # Five hundred commits in the next 0.9 s: one attempt, the rest deferred at once.
        for n in range(500):
            assert not dispatcher.dispatch([10 + n], origin="test")
            clock.now += 0.0018
        assert actors.attempts == 2
        assert not state.up
        # Two minutes of outage, a commit every 0.1 s: probes at the backoff's pace only.
        for _ in range(1200):
            clock.now += 0.1
            dispatcher.dispatch([7], origin="test")
        actors.up = True
        clock.now += 8
        assert dispatcher.dispatch([99], origin="test")

    events = [entry["event"] for entry in logs]
    assert events.count("broker_unavailable") == 1
    assert 1 <= events.count("broker_still_unavailable") <= 3  # every 60 s, not per commit
    assert events.count("broker_recovered") == 1
    assert len(events) <= 5
    # 1 (first) + 1 (after 1 s) + 1 (2 s) + 1 (4 s) + then one every 8 s over ~120 s.
    assert actors.attempts < 25
    recovered = next(entry for entry in logs if entry["event"] == "broker_recovered")
    assert recovered["deferred_items"] == 500 + 1200
    assert failed_count("test") - before == 500 + 1200
    assert actors.sent == [1, 2, 99]
    assert state.up


def test_after_recovery_the_next_outage_starts_its_backoff_again() -> None:
    clock = Clock()
    actors = FlakyActors()
    state = BrokerState(first_backoff=1, max_backoff=30, clock=clock)
    dispatcher = Dispatcher(actors, state)  # type: ignore[arg-type]
    actors.up = False
    for _ in range(6):  # 1, 2, 4, 8, 16 s of backoff
        dispatcher.dispatch([1])
        clock.now += 31
    actors.up = True
    assert dispatcher.dispatch([2])
    actors.up = False
    assert not dispatcher.dispatch([3])
    attempts = actors.attempts
    clock.now += 1.01  # a fresh outage waits 1 s, not 30
    dispatcher.dispatch([4])
    assert actors.attempts == attempts + 1
