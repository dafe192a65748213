"""The workers' metrics endpoint: one HTTP server per `pixrecon worker`, adding up the
counters of all its processes (prometheus-client's multiprocess mode) — ours
(``reconcile.metrics``) and Dramatiq's own — with the gauges read from the database
(``reconcile.metrics_state``).

`pixrecon worker` starts Dramatiq in a fresh interpreter with ``PROMETHEUS_MULTIPROC_DIR``
set, so that every worker process writes its counters to files there from its first
metric on; the server runs in a process Dramatiq forks for it (``forks``) and reads them
at each scrape."""

from __future__ import annotations

import os
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from pathlib import Path

from dramatiq.middleware.prometheus import Prometheus
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import MetricsHandler
from prometheus_client.multiprocess import MultiProcessCollector

from reconcile.db import create_db_engine
from reconcile.logs import configure_logging, get_logger
from reconcile.metrics_state import DatabaseStateCollector
from reconcile.settings import get_settings

log = get_logger(__name__)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# Where Dramatiq's middleware keeps its files; the same directory, so one collector reads
# both its families and ours.
DRAMATIQ_DB_ENV = "dramatiq_prom_db"


def multiprocess_environment(directory: Path) -> dict[str, str]:
    """The environment the worker processes need, with ``directory`` emptied: files left
    by an earlier run would add a dead process's counts to this one's."""
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.db"):
        stale.unlink()
    return {MULTIPROC_ENV: str(directory), DRAMATIQ_DB_ENV: str(directory)}


def serve_worker_metrics() -> int:
    """Run by Dramatiq in a process of its own; returns only when that process is told to
    stop (Dramatiq's handler raises ``SystemExit`` out of ``serve_forever``)."""
    settings = get_settings()
    configure_logging(settings.log_level, json=settings.log_json)
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=os.environ[MULTIPROC_ENV])  # type: ignore[no-untyped-call]
    engine = create_db_engine(settings.database_url)
    registry.register(DatabaseStateCollector(engine, settings))
    address = (settings.worker_metrics_host, settings.worker_metrics_port)
    server = ThreadingHTTPServer(address, MetricsHandler.factory(registry))
    server.daemon_threads = True
    log.info("worker_metrics_listening", url=f"http://{address[0]}:{address[1]}/metrics")
    try:
        server.serve_forever()
    finally:
        server.server_close()
        engine.dispose()
    return 0


class WorkerMetrics(Prometheus):
    """Dramatiq's Prometheus middleware (messages, errors, retries, durations), served by
    ``serve_worker_metrics`` instead of its own server, which would listen on every
    interface and leave out everything else."""

    @property
    def forks(self) -> list[Callable[[], int]]:
        return [serve_worker_metrics]


def worker_metrics_enabled() -> bool:
    """Only under `pixrecon worker`, which sets the directory up (and only when its port
    is not 0): single-node mode serves the same families from the receiver's /metrics."""
    return bool(os.environ.get(MULTIPROC_ENV)) and get_settings().worker_metrics_port != 0
