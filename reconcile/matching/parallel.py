"""Using the database's cores on a big day.

PostgreSQL runs an ``INSERT … SELECT`` on one core: it never parallelises a statement
that writes, and the nightly run is a sequence of such statements. On a big day on
PostgreSQL (``is_big``) two things run on connections of their own:

- matching the Pix received, a million verdicts in one statement and the run's largest
  phase (docs/benchmarks.md), is cut into key ranges whose statements run at the same
  time. The ranges partition the key space (each key falls in exactly one, compared byte
  by byte with ``COLLATE "C"`` whatever the database's collation), so together they write
  exactly the rows one statement would;
- work that reads only the source tables runs ``alongside`` the other matchers, which
  left alone would keep one core busy and the other idle.

What is written on a connection of its own is committed there, before the run's
transaction is. The rows belong to a run whose status is still ``running``, which no
reader takes for a day's answer (every reader asks for the latest *completed* run); a
run that fails has its rows deleted (``reconcile.nightly``). SQLite has one writer: there
everything runs in the run's transaction, in order."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Generic, TypeVar

from sqlalchemy import ColumnElement, String, Table, func, literal, select, tablesample, text
from sqlalchemy.sql import FromClause
from sqlmodel import Session

from reconcile.db import dialect_of

# Below this many rows in a day, one statement is quicker than opening connections.
SPLIT_FROM = 100_000
# Share of the table's pages sampled to estimate the day's size and where to split it.
SAMPLE_PERCENT = 1.0
# The lower range's share of the day's rows. Its verdicts go into the middle of the unique
# index on (run_id, subject, ref), just below the upper range's, where PostgreSQL splits
# each full page in half; the upper range's go at the index's right end, where a split
# leaves the page full. On a million-row day that left the lower range's leaf pages about
# half full and its statement 10-12 % slower (leaf density 64 % against 84 % for one
# statement, docs/benchmarks.md): with an even split the whole phase waited for it.
LOWER_SHARE = 0.47


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


def is_big(
    session: Session, table: Table, of_the_day: Callable[[FromClause], ColumnElement[bool]]
) -> bool:
    """Whether the day's rows of ``table`` are enough to be worth the database's other
    cores: on PostgreSQL, estimated from a sample of the table's pages."""
    if dialect_of(session) != "postgresql":
        return False
    sampled = tablesample(table, func.system(SAMPLE_PERCENT), name="sampled")
    found = session.execute(select(func.count()).where(of_the_day(sampled))).scalar_one()
    return bool(found * 100 / SAMPLE_PERCENT >= SPLIT_FROM)


def split_in_two(
    session: Session,
    table: Table,
    key: str,
    of_the_day: Callable[[FromClause], ColumnElement[bool]],
) -> list[KeyRange]:
    """Two ranges of ``key`` over the day's rows of ``table``, the lower with
    ``LOWER_SHARE`` of them. The split comes from a sample of the table's pages: where it
    falls is a matter of speed, never of what is written."""
    sampled = tablesample(table, func.system(SAMPLE_PERCENT), name="sampled")
    split = session.execute(
        select(func.percentile_disc(LOWER_SHARE).within_group(_bytes(sampled.c[key]))).where(
            of_the_day(sampled)
        )
    ).scalar_one()
    if split is None:
        return [WHOLE]
    return [KeyRange(high=split), KeyRange(low=split)]


def run_ranges(
    session: Session, ranges: list[KeyRange], write: Callable[[Session, KeyRange], None]
) -> None:
    """``write`` each range. A single range is written in ``session``, in the run's
    transaction; several are written at the same time, each on a connection of its own
    and committed when it is done."""
    if len(ranges) == 1:
        write(session, ranges[0])
        return
    with ThreadPoolExecutor(max_workers=len(ranges), thread_name_prefix="match") as pool:
        # list() waits for every range and raises the first failure.
        list(pool.map(lambda keys: _own(session, lambda own: write(own, keys)), ranges))


T = TypeVar("T")


def _own(session: Session, work: Callable[[Session], T]) -> T:
    """``work`` in a transaction of its own on the engine of ``session``, committed."""
    with Session(session.get_bind()) as own, own.begin():
        # As in the run's own transaction (reconcile.nightly): compiling costs more than
        # it saves for a statement that runs once.
        own.execute(text("SET LOCAL jit = off"))
        _without_parallel_workers(own)
        return work(own)


def _without_parallel_workers(session: Session) -> None:
    """Another connection of the run is busy at the same time, so the cores a parallel plan
    would ask for are taken: its workers would only compete with that connection, and some
    plans repeat work in each worker (a merge join walks its inner index once per worker)."""
    session.execute(text("SET LOCAL max_parallel_workers_per_gather = 0"))


class Later(Generic[T]):
    """The result of work started ``alongside``: ``result()`` waits for it."""

    def __init__(
        self, session: Session, work: Callable[[Session], T], future: Future[T] | None = None
    ) -> None:
        self._session, self._work, self._future = session, work, future

    def result(self) -> T:
        if self._future is None:
            return self._work(self._session)
        return self._future.result()


@contextmanager
def alongside(session: Session, parallel: bool, work: Callable[[Session], T]) -> Iterator[Later[T]]:
    """With ``parallel``, ``work`` runs at once on a connection of its own, committed
    when done, while the caller goes on in ``session``; otherwise it runs in ``session``
    when its result is asked for. Either way it must read only what is committed, never
    what the caller writes meanwhile. Leaving the block waits for the work, even on an
    error, so that nothing it writes lands after the caller has cleaned up."""
    if not parallel:
        yield Later(session, work)
        return
    # The caller's statements too, while the work runs beside them.
    _without_parallel_workers(session)
    # Leaving the pool waits for the work; its own failure is raised by result().
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="alongside") as pool:
        yield Later(session, work, pool.submit(_own, session, work))
    # Alone again (the report's queries), the run may use them.
    session.execute(text("SET LOCAL max_parallel_workers_per_gather TO DEFAULT"))
