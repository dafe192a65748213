"""Prometheus metrics of the receiver, on a registry of its own (one per app).

``/metrics`` also serves the process-wide families (``reconcile.metrics``: dispatch to the
broker and, in single-node mode, the workers' own) with the Python process's figures, and
in single-node mode the gauges read from the database (``reconcile.metrics_state``), which
in production the workers' metrics server serves."""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import Scope

UNMATCHED = "unmatched"


def route_label(scope: Scope) -> str:
    """The ``route`` label of a request: its route's template (``/webhooks/accounts/{kind}``),
    ``unmatched`` when none matches. Never the raw path: every path an anonymous client
    makes up would be a series of its own, and the registry would grow without bound.
    Before routing (a delivery refused at the door), the app's routes are matched here."""
    route = scope.get("route")
    if route is None:
        router = getattr(scope.get("app"), "router", None)
        route = next(
            (r for r in getattr(router, "routes", ()) if r.matches(scope)[0] == Match.FULL),
            None,
        )
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else UNMATCHED


class ReceiverMetrics:
    def __init__(self, state: Collector | None = None) -> None:
        self.registry = CollectorRegistry()
        if state is not None:
            self.registry.register(state)
        self.deliveries = Counter(
            "pixrecon_webhook_deliveries",
            "Webhook deliveries by route and HTTP status",
            ["route", "status"],
            registry=self.registry,
        )
        self.refusals = Counter(
            "pixrecon_webhook_refusals",
            "Deliveries answered with an error, by route and reason (the problem type: "
            "unauthenticated, invalid-signature, ip-not-allowed, body-too-large, "
            "malformed-json, invalid-notification, storage-unavailable, …)",
            ["route", "reason"],
            registry=self.registry,
        )
        self.items = Counter(
            "pixrecon_inbox_items",
            "Items received by route and outcome (new or duplicate)",
            ["route", "outcome"],
            registry=self.registry,
        )
        self.warnings = Counter(
            "pixrecon_item_warnings",
            "Fields of accepted items read otherwise than documented (kept raw, flagged), "
            "by item kind and field (a JSON pointer, array indexes as *)",
            ["kind", "field"],
            registry=self.registry,
        )
        self.ack_seconds = Histogram(
            "pixrecon_webhook_ack_seconds",
            "Time from request start to acknowledgement",
            ["route"],
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
            registry=self.registry,
        )

        self.commit_batch = Histogram(
            "pixrecon_receiver_commit_batch_deliveries",
            "Deliveries stored per transaction (group commit)",
            buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256),
            registry=self.registry,
        )

        # Each request's series, looked up once: ``labels()`` takes a lock and builds a key
        # every time (about 4 µs), four times a delivery. Routes are templates and statuses
        # few, so these stay small.
        self._answered: dict[tuple[str, int], tuple[Any, Any]] = {}
        self._stored: dict[str, tuple[Any, Any]] = {}

    def answered(self, route: str, status: int, seconds: float) -> None:
        """A webhook delivery answered ``status`` after ``seconds``."""
        series = self._answered.get((route, status))
        if series is None:
            series = self._answered[(route, status)] = (
                self.deliveries.labels(route, str(status)),
                self.ack_seconds.labels(route),
            )
        series[0].inc()
        series[1].observe(seconds)

    def stored(self, route: str, new: int, duplicates: int) -> None:
        """The items of one delivery: new to the inbox, or repeats of items it holds."""
        series = self._stored.get(route)
        if series is None:
            series = self._stored[route] = (
                self.items.labels(route, "new"),
                self.items.labels(route, "duplicate"),
            )
        series[0].inc(new)
        series[1].inc(duplicates)

    async def endpoint(self, _request: Request) -> Response:
        # The state collector queries the database: off the event loop.
        body = await anyio.to_thread.run_sync(self.exposition)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    def exposition(self) -> bytes:
        return generate_latest(self.registry) + generate_latest(REGISTRY)
