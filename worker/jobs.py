"""The worker's periodic jobs, each a thin call into ``reconcile``:

- ``poll_qrcode`` / ``poll_accounts``: fetch the next window of each API family
  (``reconcile.polling.day``) — polling is a primary source (docs/design.md §1.6);
- ``confirm``: look up every notified movement still pending (docs/design.md §1.5);
- ``reconcile_today``: run the nightly engine over the current business day, so
  dashboards and exceptions follow the day as it happens;
- ``prune``: retention (``reconcile.retention``), once a day by default.

Each run takes the job's database lease first (``reconcile.schedule.leased``), so running
more worker processes never multiplies the calls to the provider."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import Engine

from reconcile.confirmation import confirm_all
from reconcile.db import UNAVAILABLE_ERRORS
from reconcile.logs import get_logger
from reconcile.masking import mask_text
from reconcile.matching.context import Judging
from reconcile.metrics import JOB_RUNS
from reconcile.nightly import reconcile_day
from reconcile.polling.day import (
    Family,
    Providers,
    configured,
    pix_listed_until,
    poll_resuming,
    sources_of,
    statement_polled_until,
)
from reconcile.provider.errors import ProviderError
from reconcile.retention import prune
from reconcile.schedule import (
    CONFIRM_INTERVAL_SECONDS,
    done_elsewhere_within,
    leased,
    succeeded_within,
)
from reconcile.settings import Settings
from reconcile.timeutil import BUSINESS_TZ, utcnow
from worker.dispatch import Dispatcher

log = get_logger(__name__)

# What a job run may meet and survive: the provider or the database being unavailable.
JOB_ERRORS: tuple[type[Exception], ...] = (ProviderError, *UNAVAILABLE_ERRORS)


@dataclass(frozen=True)
class Job:
    name: str
    interval: float
    run: Callable[[], bool]


# Another process's run counts as this interval's when it ended within this share of the
# interval: the processes' ticks fall at different moments of the same cadence, and the
# margin keeps a tick that comes a little early from skipping the process's own next run.
DUE_SHARE = 0.9


def _lease(interval: float, settings: Settings) -> timedelta:
    # The lease outlives one interval a little, and a crashed run is retried after it; and
    # it outlives a call riding out the provider's throttling (PIXRECON_PROVIDER_RETRY_
    # SECONDS), so that another process does not start the same run meanwhile.
    return timedelta(seconds=max(interval * 2, 60.0, settings.provider_retry_seconds + 60.0))


class PeriodicJobs:
    def __init__(
        self, settings: Settings, engine: Engine, dispatcher: Dispatcher, providers: Providers
    ) -> None:
        self._settings = settings
        self._engine = engine
        self._dispatcher = dispatcher
        self.providers = providers
        # Unique per process: a lease held by a dead process simply expires.
        self.owner = f"{socket.gethostname()}:{uuid.uuid4().hex[:8]}"

    def jobs(self) -> list[Job]:
        s = self._settings
        jobs = [
            Job(
                "confirm",
                min(s.poll_qrcode_interval_seconds, CONFIRM_INTERVAL_SECONDS),
                self.confirm,
            ),
            Job("reconcile_today", s.reconcile_interval_seconds, self.reconcile_today),
            Job("prune", s.prune_interval_seconds, self.prune),
        ]
        families = configured(self.providers)
        if Family.QRCODE in families:
            jobs.append(Job("poll_qrcode", s.poll_qrcode_interval_seconds, self.poll_qrcode))
        if Family.ACCOUNTS in families:
            jobs.append(Job("poll_accounts", s.poll_accounts_interval_seconds, self.poll_accounts))
        return jobs

    def _survive(self, name: str, body: Callable[[], bool]) -> bool:
        """A job that meets an unavailable provider or database is retried at its next
        tick (its error is recorded by the lease); anything else is a bug, logged in one
        line and retried at the next tick too.
        ``body`` answers whether it ran (``False``: another process holds the lease)."""
        try:
            ran = body()
        except JOB_ERRORS as exc:
            log.warning("job_failed", job=name, error=f"{type(exc).__name__}: {exc}")
            JOB_RUNS.labels(name, "failed").inc()
            return False
        except Exception as exc:
            # A bug: the lease recorded it (the job shows failing in /healthz and
            # pixrecon_job_failing) and the next tick tries again. One line says what
            # broke; the stack, whose SQL may carry row values, only at DEBUG.
            JOB_RUNS.labels(name, "failed").inc()
            said = str(exc).strip().splitlines()
            log.error(
                "job_crashed",
                job=name,
                error=mask_text(f"{type(exc).__name__}: {said[0] if said else ''}"[:500]),
            )
            log.debug("job_crashed_stack", job=name, exc_info=True)
            return False
        JOB_RUNS.labels(name, "success" if ran else "skipped").inc()
        return ran

    def _done_elsewhere(self, name: str, interval: float) -> bool:
        return done_elsewhere_within(
            self._engine, name, self.owner, timedelta(seconds=interval * DUE_SHARE), now=utcnow()
        )

    def _poll(self, family: Family, interval: float) -> bool:
        def run() -> bool:
            if self._done_elsewhere(family.poll_job, interval):
                return False
            fetched = poll_resuming(
                self._engine,
                self.providers,
                family,
                self._settings,
                owner=self.owner,
                lease=_lease(interval, self._settings),
                on_new=self._dispatcher.from_polls,
            )
            if fetched is None:
                return False
            log.info("poll_done", family=family.value, seen=fetched.seen, new=len(fetched.new_ids))
            return True

        return self._survive(family.poll_job, run)

    def poll_qrcode(self) -> bool:
        return self._poll(Family.QRCODE, self._settings.poll_qrcode_interval_seconds)

    def poll_accounts(self) -> bool:
        return self._poll(Family.ACCOUNTS, self._settings.poll_accounts_interval_seconds)

    def confirm(self) -> bool:
        interval = min(self._settings.poll_qrcode_interval_seconds, CONFIRM_INTERVAL_SECONDS)

        def run() -> bool:
            if self._done_elsewhere("confirm", interval):
                return False
            with leased(
                self._engine,
                "confirm",
                self.owner,
                lease=_lease(CONFIRM_INTERVAL_SECONDS, self._settings),
            ) as job:
                if job is None:
                    return False
                p = self.providers
                # A Pix notified since the current poll's last listing is settled by its
                # next one, a call per page rather than per Pix; anything that listing
                # leaves pending is looked up on the following run.
                listed = pix_listed_until(self._engine, utcnow(), self._settings)
                confirm_all(
                    self._engine,
                    p.qrcode,
                    p.accounts,
                    self._settings,
                    listed_until=listed,
                    on_new=self._dispatcher.from_polls,
                    automatico=p.qrcode,
                )
                return True

        return self._survive("confirm", run)

    def reconcile_today(self) -> bool:
        interval = self._settings.reconcile_interval_seconds

        def run() -> bool:
            if self._done_elsewhere("reconcile_today", interval):
                return False
            with leased(
                self._engine, "reconcile_today", self.owner, lease=_lease(interval, self._settings)
            ) as job:
                if job is None:
                    return False
                now = utcnow()
                polled = statement_polled_until(self._engine, now, self._settings)
                result = reconcile_day(
                    self._engine,
                    now.astimezone(BUSINESS_TZ).date(),
                    now=now,
                    judging=Judging.from_settings(self._settings),
                    sources=sources_of(self.providers, self._settings, statement_polled=polled),
                )
                log.info(
                    "reconciled_today",
                    run_id=result.run_id,
                    verdict=result.verdict.value,
                    exceptions=result.summary["open_exceptions"],
                )
                return True

        return self._survive("reconcile_today", run)

    def prune(self) -> bool:
        interval = self._settings.prune_interval_seconds

        def run() -> bool:
            # Every worker runs its jobs once at start: a daily prune must not run again at
            # each restart, deploy or new node, at whatever hour that happens.
            if succeeded_within(self._engine, "prune", timedelta(seconds=interval), now=utcnow()):
                return False
            with leased(
                self._engine, "prune", self.owner, lease=_lease(interval, self._settings)
            ) as job:
                if job is None:
                    return False
                report = prune(
                    self._engine,
                    now=utcnow(),
                    retention_days=self._settings.retention_days,
                    actor="job:prune",
                )
                log.info("pruned", rows=report.total, retention_days=self._settings.retention_days)
                return True

        return self._survive("prune", run)
