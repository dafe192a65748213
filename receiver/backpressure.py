"""Backpressure at the door: deliveries in flight (from the request's start to its answer)
are bounded, and one beyond the bound is answered 503 with Retry-After before its body is
read — the cheapest answer there is.

Under an offered load above what the receiver can commit, the event loop itself falls
behind: requests wait for it before any handler runs, where the group committer's own
bound (``receiver/group_commit.py``) cannot see them. Bounding them here keeps memory and
latency bounded; the provider retries a 503, and nothing of the delivery was stored."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from receiver.metrics import ReceiverMetrics, route_label
from receiver.probe import is_probe
from receiver.problems import overloaded, problem_response

WEBHOOKS = "/webhooks/"


class InFlightLimit:
    def __init__(self, app: ASGIApp, *, limit: int, metrics: ReceiverMetrics) -> None:
        self.app = app
        self.limit = limit
        self.metrics = metrics
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # A probe (receiver/probe.py) is answered at once and stores nothing: refused as
        # overloaded it would count against the webhook, for no load it would have added.
        if scope["type"] != "http" or not scope["path"].startswith(WEBHOOKS) or is_probe(scope):
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.limit:
            # One event loop: no lock needed between the check and the count.
            self.metrics.refusals.labels(route_label(scope), "overloaded").inc()
            problem = overloaded(f"{self.in_flight} deliveries are already in progress")
            request_id = scope.get("state", {}).get("request_id")
            await problem_response(problem, request_id)(scope, receive, send)
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
