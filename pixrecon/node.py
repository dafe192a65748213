"""One node: the receiver app plus, in single-node mode, the workers in the same process."""

from __future__ import annotations

from types import TracebackType

from sqlalchemy import Engine
from starlette.applications import Starlette

from dashboard.app import create_dashboard
from receiver.app import create_app
from reconcile.metrics_state import DatabaseStateCollector
from reconcile.settings import Settings
from worker.runtime import InProcessWorker, WorkerRuntime, build_runtime


class Node:
    def __init__(self, settings: Settings, engine: Engine) -> None:
        self.settings = settings
        self.engine = engine
        self.runtime: WorkerRuntime = build_runtime(settings, engine)
        in_process = self.runtime.in_process
        self.app: Starlette = create_app(
            settings,
            engine,
            self.runtime.dispatcher.dispatch,
            state_metrics=DatabaseStateCollector(engine, settings) if in_process else None,
        )
        # A sub-application with its own session middleware: webhook deliveries never
        # read or write a cookie. Without users configured it answers 404 (docs/dashboards.md).
        self.app.mount("/dashboard", create_dashboard(settings, engine))
        self._workers = (
            InProcessWorker(self.runtime, settings.worker_threads) if in_process else None
        )

    def __enter__(self) -> Node:
        if self._workers is not None:
            self._workers.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._workers is not None:
            self._workers.stop()
