"""State of periodic jobs in the database: a lease per job, so that however many worker
processes run, one of them does each job per interval; and the polling window, so that
each poll overlaps the previous one and a restart resumes where it stopped.

``leased`` is the one way to run a job under its lease: the worker's periodic jobs and the
CLI commands that do the same work (``pixrecon poll``) both use it."""

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


def succeeded(session: Session, name: str, *, now: datetime, window_end: datetime | None) -> None:
    values: dict[str, object] = {"last_success_at": now, "last_error": None, "leased_until": now}
    if window_end is not None:
        values["last_window_end"] = window_end
    session.execute(update(ScheduledJob).where(col(ScheduledJob.name) == name).values(**values))


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
    with session_scope(engine) as session:
        succeeded(session, name, now=utcnow(), window_end=run.window_end)
