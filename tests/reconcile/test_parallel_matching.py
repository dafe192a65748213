"""On a big day on PostgreSQL the Pix received are matched in two key ranges at once, on
connections of their own, and the statement lines and the bridge's source figures are read
on another while the other matchers run (``reconcile.matching.parallel``). It must be
invisible: the same verdicts, row for row, as one transaction in order, the same report
and the same movements export; and a run that fails half-way keeps no verdict of what had
already committed on another connection."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import date, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, func, insert, select, text
from sqlalchemy.engine import make_url

from benchmarks.nightly_data import Plan, generate, loader_session
from reconcile import nightly
from reconcile.db import create_db_engine, session_scope, table_of
from reconcile.exports.movements import movement_table
from reconcile.matching import bridge, movements, parallel
from reconcile.matching.parallel import KeyRange
from reconcile.models import InboxItem, ReconciliationItem, ReconciliationRun, StatementEntry
from reconcile.nightly import reconcile_day
from tests.conftest import truncate

pytestmark = pytest.mark.postgres

PLAN = Plan(events=3000, lines=3000, charges=330, day=date(2026, 3, 10))
NOW = PLAN.end + timedelta(hours=2)
# Everything a reader of a verdict sees, but the run it belongs to and its row id.
FIELDS = [c.name for c in table_of(ReconciliationItem).c if c.name not in ("id", "run_id")]


@pytest.fixture(scope="module")
def day_engine(postgres_url: str) -> Iterator[Engine]:
    """A database with one generated business day of every status (the nightly
    benchmark's generator at a small size), shared by the tests of this module."""
    engine = create_db_engine(postgres_url)
    truncate(engine)
    with engine.connect() as conn:
        loader_session(conn)
        generate(conn, PLAN, log=lambda _: None)
    with session_scope(engine) as session:
        # A line of a category nobody explains: the statement-line matcher's verdict.
        session.execute(
            insert(StatementEntry).values(
                entry_id="unexplained-1",
                type="CREDIT",
                category="INTEREST",
                amount_cents=1234,
                booked_at=PLAN.start + timedelta(hours=10),
                inbox_item_id=select(func.min(InboxItem.id)).scalar_subquery(),
            )
        )
    yield engine
    truncate(engine)
    engine.dispose()


def _verdicts(engine: Engine, run_id: int) -> list[tuple[Any, ...]]:
    items = table_of(ReconciliationItem)
    with session_scope(engine) as session:
        rows = session.execute(
            select(*(items.c[name] for name in FIELDS)).where(items.c.run_id == run_id)
        ).all()
    return sorted(tuple(row) for row in rows)


def _latest_run(engine: Engine) -> tuple[str, int]:
    """The newest run's status and how many verdicts it kept."""
    items, runs = table_of(ReconciliationItem), table_of(ReconciliationRun)
    with session_scope(engine) as session:
        run_id, status = session.execute(
            select(runs.c.id, runs.c.status).order_by(runs.c.id.desc()).limit(1)
        ).one()
        kept = session.execute(select(func.count()).where(items.c.run_id == run_id)).scalar_one()
    return str(status), int(kept)


def _split_everything(monkeypatch: pytest.MonkeyPatch) -> list[list[KeyRange]]:
    """Take any day for a big one, split it from every page (not a sample), and record the
    ranges run."""
    monkeypatch.setattr(parallel, "SPLIT_FROM", 1)
    monkeypatch.setattr(parallel, "SAMPLE_PERCENT", 100.0)
    seen: list[list[KeyRange]] = []
    real = parallel.run_ranges

    def recording(session: Any, ranges: list[KeyRange], write: Any) -> None:
        seen.append(list(ranges))
        real(session, ranges, write)

    monkeypatch.setattr(movements, "run_ranges", recording)
    return seen


def test_a_split_day_has_the_verdicts_of_one_statement(
    day_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = reconcile_day(day_engine, PLAN.day, now=NOW)
    expected = _verdicts(day_engine, whole.run_id)
    exported = list(movement_table(day_engine, PLAN.day).rows)

    seen = _split_everything(monkeypatch)
    beside: list[str] = []
    real_side = nightly._statement_side

    def recording_side(session: Any, ctx: Any) -> Any:
        beside.append(threading.current_thread().name)
        return real_side(session, ctx)

    monkeypatch.setattr(nightly, "_statement_side", recording_side)
    split = reconcile_day(day_engine, PLAN.day, now=NOW)

    assert [len(ranges) for ranges in seen] == [2]
    assert len(beside) == 1
    assert beside[0] != threading.current_thread().name
    at = seen[0][0].high
    assert at is not None
    assert seen[0][1].low == at
    got = _verdicts(day_engine, split.run_id)
    refs = [row[FIELDS.index("ref")] for row in got if row[FIELDS.index("subject")] == "movement"]
    # Both ranges wrote verdicts: the split really happened.
    assert any(ref < at for ref in refs)
    assert any(ref >= at for ref in refs)
    # The lower range, slower per row (its index pages split in half), has fewer of them.
    received = [ref for ref in refs if ref.startswith("E")]
    lower = sum(1 for ref in received if ref < at) / len(received)
    assert abs(lower - parallel.LOWER_SHARE) < 0.02, lower
    assert len(got) == len(expected) > PLAN.events
    assert ("statement", "unexplained-1") in {
        (row[FIELDS.index("subject")], row[FIELDS.index("ref")]) for row in got
    }
    assert got == expected
    # The halves' rows get their ids in whatever order the two connections write them;
    # the export is read by key, so the file is the same, row for row.
    assert list(movement_table(day_engine, PLAN.day).rows) == exported
    assert {k: v for k, v in split.summary.items() if k != "run_id"} == {
        k: v for k, v in whole.summary.items() if k != "run_id"
    }


def test_a_run_failing_after_a_range_committed_keeps_no_verdict(
    day_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    _split_everything(monkeypatch)
    real = movements._match_received

    def upper_half_fails(session: Any, ctx: Any, keys: KeyRange) -> None:
        if keys.low is not None:
            raise RuntimeError("the database went away")
        real(session, ctx, keys)

    monkeypatch.setattr(movements, "_match_received", upper_half_fails)
    with pytest.raises(RuntimeError, match="went away"):
        reconcile_day(day_engine, PLAN.day, now=NOW)

    assert _latest_run(day_engine) == ("failed", 0)


def test_a_run_failing_while_work_alongside_commits_keeps_none_of_it(
    day_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The statement lines' verdicts are committed on their own connection; a matcher of
    the run's transaction fails before they are. The run waits for them, then deletes
    them with the rest: none lands after the clean-up."""
    _split_everything(monkeypatch)
    real_side = nightly._statement_side
    done = threading.Event()

    def slow_side(session: Any, ctx: Any) -> Any:
        time.sleep(0.5)
        try:
            return real_side(session, ctx)
        finally:
            done.set()

    def charges_fail(session: Any, ctx: Any) -> None:
        raise RuntimeError("the charges could not be read")

    monkeypatch.setattr(nightly, "_statement_side", slow_side)
    monkeypatch.setattr(
        nightly,
        "MATCHERS",
        [(n, charges_fail if n == "charges" else m) for n, m in nightly.MATCHERS],
    )
    with pytest.raises(RuntimeError, match="could not be read"):
        reconcile_day(day_engine, PLAN.day, now=NOW)

    assert done.wait(10)
    time.sleep(0.2)  # its commit, had it not been waited for
    assert _latest_run(day_engine) == ("failed", 0)


def test_a_run_failing_in_its_report_keeps_none_of_its_committed_verdicts(
    day_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Pix received's verdicts are committed on their own connections before the
    report is written; a report that fails still leaves none of them."""
    _split_everything(monkeypatch)

    def deadlines_fail(session: Any, ctx: Any) -> None:
        raise RuntimeError("the deadlines could not be set")

    monkeypatch.setattr(nightly, "annotate_priorities", deadlines_fail)
    with pytest.raises(RuntimeError, match="could not be set"):
        reconcile_day(day_engine, PLAN.day, now=NOW)
    assert _latest_run(day_engine) == ("failed", 0)


def test_connections_busy_at_the_same_time_plan_without_parallel_workers(
    day_engine: Engine, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While two connections of the run work at once, neither asks PostgreSQL for parallel
    workers (the cores are taken: they would only compete); the run's own connection may
    again once it is alone, for the report."""
    _split_everything(monkeypatch)
    seen: dict[str, list[str]] = {}

    def setting(session: Any) -> str:
        return str(session.execute(text("SHOW max_parallel_workers_per_gather")).scalar_one())

    def recorded(name: str, real: Any) -> Any:
        def wrapper(session: Any, ctx: Any, *args: Any) -> Any:
            seen.setdefault(name, []).append(setting(session))
            return real(session, ctx, *args)

        return wrapper

    monkeypatch.setattr(movements, "_match_received", recorded("range", movements._match_received))
    monkeypatch.setattr(nightly, "_statement_side", recorded("alongside", nightly._statement_side))
    monkeypatch.setattr(nightly, "MATCHERS", [(n, recorded(n, m)) for n, m in nightly.MATCHERS])
    monkeypatch.setattr(nightly, "day_bridge", recorded("report", bridge.day_bridge))
    # Every connection starts with 3 workers allowed, whatever the server's own default.
    url = make_url(postgres_url).update_query_dict(
        {"options": "-c max_parallel_workers_per_gather=3"}
    )
    engine = create_db_engine(url.render_as_string(hide_password=False))
    try:
        reconcile_day(engine, PLAN.day, now=NOW)
    finally:
        engine.dispose()

    assert seen["range"] == ["0", "0"]
    assert seen["alongside"] == ["0"]
    assert seen["charges"] == ["0"]
    assert seen["report"] == ["3"]
