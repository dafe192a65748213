"""State of periodic jobs in the database: a lease per job, so that however many worker
processes run, one of them does each job per interval; and the polling window, so that
each poll overlaps the previous one and a restart resumes where it stopped.

``leased`` is the one way to run a job under its lease: the worker's periodic jobs and the
CLI commands that do the same work (``pixrecon poll``) both use it. ``job_health`` reads
the jobs' last successes back for ``/healthz``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Engine, select, update
from sqlmodel import Session, col

from reconcile.db import dialect_of, insert_for, session_scope, table_of
from reconcile.models import ScheduledJob
from reconcile.settings import Settings
from reconcile.timeutil import as_utc, utcnow


def claim(session: Session, name: str, owner: str, *, lease: timedelta, now: datetime) -> bool:
    """Take the job's lease unless another owner holds an unexpired one."""
    table = table_of(ScheduledJob)
    insert = insert_for(dialect_of(session))
    stmt = insert(table).values(name=name, owner=owner, leased_until=now + lease)
    upsert = stmt.on_conflict_do_update(
        index_elements=[table.c.name],
        set_={"owner": stmt.excluded.owner, "leased_until": stmt.excluded.leased_until},
        where=(table.c.leased_until.is_(None))
        | (table.c.leased_until < now)
        | (table.c.owner == owner),
    ).returning(table.c.name)
    return session.execute(upsert).first() is not None


def window(
    session: Session,
    name: str,
    *,
    now: datetime,
    overlap: timedelta,
    initial_lookback: timedelta,
) -> tuple[datetime, datetime]:
    """[start, end] of the next poll: from just before where the last one ended."""
    last_end = session.execute(
        select(col(ScheduledJob.last_window_end)).where(col(ScheduledJob.name) == name)
    ).scalar_one_or_none()
    start = (as_utc(last_end) - overlap) if last_end is not None else now - initial_lookback
    return start, now


def next_window(engine: Engine, name: str, settings: Settings) -> tuple[datetime, datetime]:
    with session_scope(engine) as session:
        return window(
            session,
            name,
            now=utcnow(),
            overlap=timedelta(seconds=settings.poll_overlap_seconds),
            initial_lookback=timedelta(seconds=settings.poll_initial_lookback_seconds),
        )


def succeeded_within(engine: Engine, name: str, interval: timedelta, *, now: datetime) -> bool:
    """Whether job ``name`` last succeeded less than ``interval`` ago (in any process)."""
    with session_scope(engine) as session:
        last = session.execute(
            select(col(ScheduledJob.last_success_at)).where(col(ScheduledJob.name) == name)
        ).scalar_one_or_none()
    return last is not None and now - as_utc(last) < interval


def done_elsewhere_within(
    engine: Engine, name: str, owner: str, interval: timedelta, *, now: datetime
) -> bool:
    """Whether a process other than ``owner`` last took job ``name`` and it succeeded less
    than ``interval`` ago. The lease is given back when a run ends, so without this every
    process ticking on the job's cadence would run it again right after the first: one
    run per interval, not one per process."""
    with session_scope(engine) as session:
        row = session.execute(
            select(col(ScheduledJob.owner), col(ScheduledJob.last_success_at)).where(
                col(ScheduledJob.name) == name
            )
        ).first()
    if row is None or row.last_success_at is None or row.owner == owner:
        return False
    return now - as_utc(row.last_success_at) < interval


def succeeded(session: Session, name: str, *, now: datetime, window_end: datetime | None) -> None:
    values: dict[str, object] = {"last_success_at": now, "last_error": None, "leased_until": now}
    if window_end is not None:
        values["last_window_end"] = window_end
    session.execute(update(ScheduledJob).where(col(ScheduledJob.name) == name).values(**values))


def release(session: Session, name: str, owner: str, *, now: datetime) -> None:
    """Give ``owner``'s lease of the job back, recording nothing about the run."""
    session.execute(
        update(ScheduledJob)
        .where(col(ScheduledJob.name) == name, col(ScheduledJob.owner) == owner)
        .values(leased_until=now)
    )


def failed(session: Session, name: str, *, error: str, now: datetime) -> None:
    # Give the lease back so another process can try at the next tick.
    session.execute(
        update(ScheduledJob)
        .where(col(ScheduledJob.name) == name)
        .values(last_error=error[:2000], leased_until=now)
    )


@dataclass
class JobRun:
    name: str
    window_end: datetime | None = None
    """Set by a polling job: where the next window starts (less the overlap)."""


@contextmanager
def leased(engine: Engine, name: str, owner: str, *, lease: timedelta) -> Iterator[JobRun | None]:
    """Run the body as job ``name`` if ``owner`` wins the lease (else the body gets
    ``None``): success moves the job's window and clears its last error; an exception is
    recorded as ``last_error``, gives the lease back, and propagates."""
    with session_scope(engine) as session:
        won = claim(session, name, owner, lease=lease, now=utcnow())
    if not won:
        yield None
        return
    run = JobRun(name)
    try:
        yield run
    except Exception as exc:
        with session_scope(engine) as session:
            failed(session, name, error=f"{type(exc).__name__}: {exc}", now=utcnow())
        raise
    except BaseException:
        # Stopped, not failed (Ctrl-C, a shutdown): the lease goes back at once, or the
        # workers' own runs of the job would wait out the whole lease (ten minutes for
        # ``pixrecon poll``) while the health check calls it running.
        with session_scope(engine) as session:
            release(session, name, owner, now=utcnow())
        raise
    with session_scope(engine) as session:
        succeeded(session, name, now=utcnow(), window_end=run.window_end)


# The worker's ``confirm`` job runs at least this often (``worker.jobs``).
CONFIRM_INTERVAL_SECONDS = 30.0
# A job may go this many of its own intervals without success before it is overdue, when
# that is longer than PIXRECON_HEALTH_MAX_JOB_AGE_SECONDS: a run that crashed holds its
# lease for two intervals before another process retries it.
JOB_AGE_INTERVALS = 4


def job_intervals(settings: Settings) -> dict[str, float]:
    """The periodic jobs the workers run under ``settings``, and how often: what
    ``worker.jobs.PeriodicJobs.jobs`` schedules (a test holds the two together)."""
    s = settings
    jobs = {
        "confirm": min(s.poll_qrcode_interval_seconds, CONFIRM_INTERVAL_SECONDS),
        "reconcile_today": s.reconcile_interval_seconds,
        "prune": s.prune_interval_seconds,
    }
    if s.qrcode_configured:
        jobs["poll_qrcode"] = s.poll_qrcode_interval_seconds
    if s.accounts_configured:
        jobs["poll_accounts"] = s.poll_accounts_interval_seconds
    return jobs


def expected_jobs(settings: Settings) -> dict[str, float]:
    """The jobs that must keep succeeding, each with how long it may go without success.

    A polling job is expected only when its API family is configured. With no provider
    API configured at all nothing is: confirming and reconciling have nothing to ask (the
    receiver already says so in ``confirmation``), so a fresh install is not unhealthy
    for want of a worker it does not need yet."""
    if not (settings.qrcode_configured or settings.accounts_configured):
        return {}
    floor = settings.health_max_job_age_seconds
    return {
        name: max(floor, JOB_AGE_INTERVALS * interval)
        for name, interval in job_intervals(settings).items()
    }


@dataclass(frozen=True)
class JobHealth:
    name: str
    max_age_seconds: float
    last_success_at: datetime | None
    seconds_without_success: float
    """Since its last success; since ``since`` (the receiver's start) if it never had one."""
    last_error: str | None
    """The last run's error when it failed (cleared by a success)."""
    running: bool = False
    """A process holds the job's lease now: a run is under way (or its process died)."""

    @property
    def overdue(self) -> bool:
        return self.seconds_without_success > self.max_age_seconds

    @property
    def failing(self) -> bool:
        return self.last_error is not None


def job_health(
    session: Session, settings: Settings, *, now: datetime, since: datetime
) -> list[JobHealth]:
    """Every expected job (``expected_jobs``) with how long it has gone without success.
    A job that never succeeded is counted from ``since``: whoever asks (the receiver)
    gives it one threshold from its own start to run for the first time."""
    allowed = expected_jobs(settings)
    if not allowed:
        return []
    rows = {
        row.name: row
        for row in session.execute(
            select(ScheduledJob).where(col(ScheduledJob.name).in_(list(allowed)))
        ).scalars()
    }
    health = []
    for name, max_age in sorted(allowed.items()):
        row = rows.get(name)
        last = as_utc(row.last_success_at) if row and row.last_success_at else None
        reference = last if last is not None else since
        health.append(
            JobHealth(
                name=name,
                max_age_seconds=max_age,
                last_success_at=last,
                seconds_without_success=max(0.0, (now - reference).total_seconds()),
                last_error=row.last_error if row else None,
                running=bool(row and row.leased_until and as_utc(row.leased_until) > now),
            )
        )
    return health
