"""State of periodic jobs in the database: a lease per job, so that however many worker
processes run, one of them does each job per interval; and the polling window, so that
each poll overlaps the previous one and a restart resumes where it stopped."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, col

from reconcile.models import ScheduledJob
from reconcile.timeutil import as_utc


def claim(session: Session, name: str, owner: str, *, lease: timedelta, now: datetime) -> bool:
    """Take the job's lease unless another owner holds an unexpired one."""
    table = ScheduledJob.__table__  # type: ignore[attr-defined]
    insert = postgresql.insert if session.get_bind().dialect.name == "postgresql" else sqlite.insert
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
