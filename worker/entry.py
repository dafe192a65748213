"""Module for the ``dramatiq`` command line: ``dramatiq worker.entry``.

Importing it builds the broker from the environment and declares the actors, which is
what a Dramatiq worker process needs; ``pixrecon worker`` runs exactly this.
"""

from __future__ import annotations

import dramatiq

from reconcile.db import create_db_engine
from reconcile.heap import freeze_startup_objects
from reconcile.logs import configure_logging
from reconcile.settings import get_settings
from worker.metrics import WorkerMetrics, worker_metrics_enabled
from worker.runtime import build_runtime

settings = get_settings()
configure_logging(settings.log_level, json=settings.log_json)
runtime = build_runtime(settings, create_db_engine(settings.database_url))
broker = runtime.broker
if worker_metrics_enabled():
    broker.add_middleware(WorkerMetrics())
dramatiq.set_broker(broker)
# Imported once per worker process, before it takes any message.
freeze_startup_objects()
