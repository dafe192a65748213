"""Wiring of broker, actors, dispatcher and sweeper — once per process."""

from __future__ import annotations

from dataclasses import dataclass

import dramatiq
from dramatiq.brokers.stub import StubBroker
from sqlalchemy import Engine

from reconcile.provider.factory import provider_clients
from reconcile.settings import Settings
from worker.actors import Actors, declare_actors
from worker.broker import build_broker
from worker.dispatch import Dispatcher
from worker.jobs import PeriodicJobs
from worker.scheduler import SchedulerMiddleware
from worker.sweeper import Sweeper, SweeperMiddleware


@dataclass
class WorkerRuntime:
    broker: dramatiq.Broker
    actors: Actors
    dispatcher: Dispatcher
    sweeper: Sweeper
    jobs: PeriodicJobs

    @property
    def in_process(self) -> bool:
        return isinstance(self.broker, StubBroker)


def build_runtime(settings: Settings, engine: Engine) -> WorkerRuntime:
    broker = build_broker(settings)
    actors = declare_actors(broker, engine)
    dispatcher = Dispatcher(actors)
    sweeper = Sweeper(
        engine,
        dispatcher,
        interval=settings.sweep_interval_seconds,
        redispatch_after=settings.redispatch_after_seconds,
        batch_size=settings.sweep_batch_size,
    )
    broker.add_middleware(SweeperMiddleware(sweeper))
    jobs = PeriodicJobs(settings, engine, dispatcher, provider_clients(settings))
    if settings.scheduler_enabled:
        broker.add_middleware(SchedulerMiddleware(jobs))
    return WorkerRuntime(
        broker=broker, actors=actors, dispatcher=dispatcher, sweeper=sweeper, jobs=jobs
    )


class InProcessWorker:
    """Worker threads inside the current process (single-node mode, demo, tests)."""

    def __init__(self, runtime: WorkerRuntime, threads: int) -> None:
        self._worker = dramatiq.Worker(runtime.broker, worker_threads=threads, worker_timeout=100)

    def start(self) -> None:
        self._worker.start()

    def stop(self) -> None:
        self._worker.stop()

    def join(self) -> None:
        self._worker.join()
