"""The Dramatiq broker: Redis in production, in-process when no broker URL is set."""

from __future__ import annotations

import dramatiq
import redis
from dramatiq.brokers.redis import RedisBroker
from dramatiq.brokers.stub import StubBroker

from reconcile.settings import Settings

INBOX_QUEUE = "inbox"


def build_broker(settings: Settings) -> dramatiq.Broker:
    if settings.broker_url:
        # Short socket timeouts: a dead Redis must make a send fail fast (the sweeper
        # re-sends later), never hang a request.
        client = redis.Redis.from_url(
            settings.broker_url,
            socket_connect_timeout=2,
            socket_timeout=10,
            health_check_interval=30,
        )
        return RedisBroker(client=client)  # type: ignore[no-untyped-call]
    return StubBroker()
