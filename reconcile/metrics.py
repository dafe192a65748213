"""Prometheus metrics of the work behind the receiver: processing, confirmation, periodic
jobs, provider calls, reconciliation runs and dispatch to the broker.

They live on the process's default registry, so they are counted wherever the work runs:
in `pixrecon worker` processes (whose metrics server adds up every process, through
prometheus-client's multiprocess mode: docs/deploy.md) and in `pixrecon serve` in
single-node mode (its own ``/metrics``). `pixrecon worker` starts its interpreter with
the multiprocess directory already in the environment, which prometheus-client reads once,
when first imported.

Counters are incremented after the transaction they count has committed: a count never
includes work that was rolled back."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

ITEMS_PROCESSED = Counter(
    "pixrecon_items_processed",
    "Inbox items handled by the workers, by item kind and the status they ended in "
    "(processed, failed, unsupported)",
    ["kind", "status"],
)
ITEM_LATENCY = Histogram(
    "pixrecon_item_latency_seconds",
    "Time from an item's arrival (first received or polled) to its processing",
    ["kind"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600),
)
CONFIRMATIONS = Counter(
    "pixrecon_confirmations",
    "Look-ups of notified movements at the provider's API, by subject (pix, refund, "
    "movement, recurrence, recurring_charge) and outcome (confirmed, unconfirmed, "
    "mismatched, still_pending, unverifiable, failed)",
    ["subject", "outcome"],
)
# The periodic job is `job_name`, not `job`: Prometheus's own `job` label names the
# scrape target, and a clash would rename ours to `exported_job`.
JOB_RUNS = Counter(
    "pixrecon_job_runs",
    "Runs of the periodic jobs by outcome: success, failed (the provider or the database "
    "was unavailable), skipped (another process held the job's lease)",
    ["job_name", "outcome"],
)
PROVIDER_REQUESTS = Counter(
    "pixrecon_provider_requests",
    "Requests to the provider's APIs by API family, endpoint (path template) and HTTP "
    "status, or 'error' when no answer came",
    ["api", "endpoint", "status"],
)
PROVIDER_SECONDS = Histogram(
    "pixrecon_provider_request_seconds",
    "Duration of requests to the provider's APIs",
    ["api", "endpoint"],
    buckets=(0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
RECONCILIATION_RUNS = Counter(
    "pixrecon_reconciliation_runs",
    "Completed reconciliation runs of this process (the workers' reconcile_today) by "
    "verdict; the nightly command's verdicts are in pixrecon_day_verdict",
    ["verdict"],
)
DISPATCHES = Counter(
    "pixrecon_dispatch",
    "Inbox item ids handed to the broker, by origin (receiver, sweeper, poll, replay) and "
    "outcome (sent; failed: the broker did not take them, the sweeper sends them later)",
    ["origin", "outcome"],
)
