"""Runs the periodic jobs (``worker.jobs``) on intervals inside every worker process
(APScheduler); the database leases decide which process actually does each run."""

from __future__ import annotations

from typing import Any

import dramatiq
from apscheduler.schedulers.background import BackgroundScheduler

from reconcile.timeutil import utcnow
from worker.jobs import PeriodicJobs


class SchedulerMiddleware(dramatiq.Middleware):
    def __init__(self, jobs: PeriodicJobs) -> None:
        self.jobs = jobs
        self.scheduler: BackgroundScheduler | None = None

    def after_worker_boot(self, broker: dramatiq.Broker, worker: Any) -> None:
        scheduler = BackgroundScheduler(timezone="UTC")
        for job in self.jobs.jobs():
            # One run at a time per job; a run missed while busy is merged into the next.
            scheduler.add_job(
                job.run,
                "interval",
                seconds=job.interval,
                id=job.name,
                max_instances=1,
                coalesce=True,
                # First run right away rather than one interval after boot.
                next_run_time=utcnow(),
            )
        scheduler.start()
        self.scheduler = scheduler

    def before_worker_shutdown(self, broker: dramatiq.Broker, worker: Any) -> None:
        if self.scheduler is not None:
            self.scheduler.shutdown(wait=True)
            self.scheduler = None
