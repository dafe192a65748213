"""Splitting the day's largest matcher across the database's cores.

PostgreSQL runs an ``INSERT … SELECT`` on one core: it never parallelises a statement
that writes. Matching a million Pix received is one such statement, and the nightly
run's largest phase (docs/benchmarks.md), so on PostgreSQL it is cut into key ranges
whose statements run at the same time on connections of their own. The ranges partition
the key space (each key falls in exactly one, compared byte by byte with ``COLLATE "C"``
whatever the database's collation), so together they write exactly the rows one statement
would.

Each range commits on its own connection, before the run's transaction does. The rows
belong to a run whose status is still ``running``, which no reader takes for a day's
answer (every reader asks for the latest *completed* run); a run that fails has its rows
deleted (``reconcile.nightly``). SQLite has one writer: there the matcher runs whole, in
the run's transaction."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from sqlalchemy import ColumnElement, String, Table, func, literal, select, tablesample, text
from sqlalchemy.sql import FromClause
from sqlmodel import Session

from reconcile.db import dialect_of

# Below this many rows in a day, one statement is quicker than opening connections.
SPLIT_FROM = 100_000
# Share of the table's pages sampled to estimate the day's size and its median key.
SAMPLE_PERCENT = 1.0


@dataclass(frozen=True)
class KeyRange:
    """Keys ``>= low`` and ``< high`` (an open end is ``None``)."""

    low: str | None = None
    high: str | None = None

    def holds(self, key: ColumnElement[str], prefix: str = "") -> list[ColumnElement[bool]]:
        """Conditions that keep ``key`` (``prefix`` + a key of this range) in the range."""
        found: list[ColumnElement[bool]] = []
        if self.low is not None:
            found.append(_bytes(key) >= _bytes(literal(prefix + self.low, String)))
        if self.high is not None:
            found.append(_bytes(key) < _bytes(literal(prefix + self.high, String)))
        return found


WHOLE = KeyRange()


def _bytes(column: ColumnElement[str]) -> ColumnElement[str]:
    return column.collate("C")


def split_at_median(
    session: Session,
    table: Table,
    key: str,
    of_the_day: Callable[[FromClause], ColumnElement[bool]],
) -> list[KeyRange]:
    """Two ranges split at the median ``key`` of the day's rows of ``table`` on a big day
    on PostgreSQL; otherwise the whole key space. The median comes from a sample of the
    table's pages: an even split is a matter of speed, never of what is written."""
    if dialect_of(session) != "postgresql":
        return [WHOLE]
    sampled = tablesample(table, func.system(SAMPLE_PERCENT), name="sampled")
    found, median = session.execute(
        select(
            func.count(),
            func.percentile_disc(0.5).within_group(_bytes(sampled.c[key])),
        ).where(of_the_day(sampled))
    ).one()
    if median is None or found * 100 / SAMPLE_PERCENT < SPLIT_FROM:
        return [WHOLE]
    return [KeyRange(high=median), KeyRange(low=median)]


def run_ranges(
    session: Session, ranges: list[KeyRange], write: Callable[[Session, KeyRange], None]
) -> None:
    """``write`` each range. A single range is written in ``session``, in the run's
    transaction; several are written at the same time, each on a connection of its own
    and committed when it is done."""
    if len(ranges) == 1:
        write(session, ranges[0])
        return
    engine = session.get_bind()

    def one(keys: KeyRange) -> None:
        with Session(engine) as own, own.begin():
            # As in the run's own transaction (reconcile.nightly): compiling costs more
            # than it saves for a statement that runs once.
            own.execute(text("SET LOCAL jit = off"))
            write(own, keys)

    with ThreadPoolExecutor(max_workers=len(ranges), thread_name_prefix="match") as pool:
        # list() waits for every range and raises the first failure.
        list(pool.map(one, ranges))
