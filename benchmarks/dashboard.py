"""The dashboard benchmark: how long each page takes to answer over a business day of
100,000 movements (docs/dashboards.md; the aim is well under a second).

    python benchmarks/dashboard.py [--events 100000] [--history-days 6] [--repeat 20]
                                   [--sqlite] [--database-url URL] [--keep]

Creates a fresh PostgreSQL database beside the one ``--database-url`` names, migrates it,
loads the day (and earlier days of the same size, so that "recent days" has something to
chart) with ``benchmarks/nightly_data.py``, reconciles every day with
``reconcile.nightly.reconcile_day``, then serves the dashboard with uvicorn on loopback
and times real HTTP requests from a signed-in client: the first request of each page
(nothing cached in the process; a run the worker just finished is in that state) and
``--repeat`` more (median, 95th percentile, slowest). ``--sqlite`` also copies the
database into a SQLite file and measures the same pages there (single-node mode).
Prints a table and writes the whole result as JSON.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    # Run as a script: the repository root, not benchmarks/, must be importable.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
from sqlalchemy import Engine, func, insert, select, text
from sqlalchemy.engine import make_url
from sqlmodel import SQLModel
from starlette.applications import Starlette

from benchmarks.common import DEFAULT_URL, engine_version, psycopg_url, scratch_database
from benchmarks.nightly_data import IdBases, Plan, generate, loader_session

TARGET_SECONDS = 1.0
PASSWORD = "benchmark-password"  # noqa: S105 (a throwaway user of a scratch database)
COPY_BATCH = 20_000


def load_days(engine: Engine, plan: Plan, history_days: int) -> list[date]:
    days = [plan.day - timedelta(days=back) for back in range(history_days, -1, -1)]
    with engine.connect() as conn:
        loader_session(conn)
        bases = IdBases()
        for day in days:
            print(f"  loading {day} …")
            generate(conn, replace(plan, day=day), bases=bases, measured=False)
    with engine.execution_options(isolation_level="AUTOCOMMIT").connect() as conn:
        conn.execute(text("VACUUM (ANALYZE)"))
    return days


def reconcile_days(engine: Engine, plan: Plan, days: list[date]) -> dict[str, float]:
    from reconcile.nightly import reconcile_day

    took: dict[str, float] = {}
    for day in days:
        began = time.perf_counter()
        day_plan = replace(plan, day=day)
        reconcile_day(engine, day, now=day_plan.end + timedelta(hours=2))
        took[day.isoformat()] = round(time.perf_counter() - began, 2)
        print(f"  reconciled {day} in {took[day.isoformat()]:.1f} s")
    return took


def copy_to_sqlite(source: Engine, path: Path) -> Engine:
    """The same rows in a migrated SQLite file (single-node mode)."""
    from migrations.apply import upgrade
    from reconcile.db import create_db_engine

    target = create_db_engine(f"sqlite:///{path}")
    upgrade(target)
    with source.connect() as reading, target.begin() as writing:
        writing.exec_driver_sql("PRAGMA foreign_keys=OFF")
        for table in SQLModel.metadata.sorted_tables:
            result = reading.execution_options(stream_results=True).execute(select(table))
            for rows in result.mappings().partitions(COPY_BATCH):
                writing.execute(insert(table), [dict(row) for row in rows])
    with target.connect() as conn:
        conn.exec_driver_sql("ANALYZE")
    return target


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found is not None
    return found.group(1)


def pages(engine: Engine, day: date) -> dict[str, str]:
    """The pages timed, with the case and status a person would pick on a busy day."""
    from reconcile.models import ExceptionCase

    with engine.connect() as conn:
        case_id, status = conn.execute(
            select(ExceptionCase.id, ExceptionCase.status)  # type: ignore[call-overload]
            .where(ExceptionCase.business_date == day, ExceptionCase.subject == "movement")
            .order_by(ExceptionCase.id)
            .limit(1)
        ).one()
        cases = conn.execute(select(func.count()).select_from(ExceptionCase)).scalar_one()
    last_page = max(1, -(-int(cases) // 50))
    d = day.isoformat()
    return {
        "day": f"/dashboard/?date={d}",
        "exceptions (priority)": "/dashboard/exceptions",
        "exceptions (amount)": "/dashboard/exceptions?sort=amount",
        "exceptions (age, last page)": f"/dashboard/exceptions?sort=age&page={last_page}",
        "exceptions (status, day)": f"/dashboard/exceptions?status={status}&date={d}",
        "exception detail": f"/dashboard/exceptions/{case_id}",
        "exceptions CSV": f"/dashboard/exceptions.csv?date={d}",
        "recent 14 days": f"/dashboard/recent?until={d}&days=14",
        "recent 60 days": f"/dashboard/recent?until={d}&days=60",
    }


def measure_pages(engine: Engine, day: date, repeat: int) -> dict[str, Any]:
    from dashboard.app import create_dashboard
    from dashboard.passwords import hash_password
    from reconcile.settings import Settings
    from sandbox.server import BackgroundServer

    settings = Settings(
        _env_file=None,
        database_url=engine.url.render_as_string(hide_password=False),
        dashboard_users=[f"bench:{hash_password(PASSWORD)}"],
        dashboard_secret="b" * 48,
        dashboard_cookie_secure=False,
    )
    app = Starlette()
    app.mount("/dashboard", create_dashboard(settings, engine))
    measured: dict[str, Any] = {}
    with (
        BackgroundServer(app) as server,
        httpx.Client(base_url=server.url, timeout=60) as client,
    ):
        token = _csrf(client.get("/dashboard/login").text)
        signed = client.post(
            "/dashboard/login", data={"csrf": token, "name": "bench", "password": PASSWORD}
        )
        assert signed.status_code == 303, signed.text
        for name, path in pages(engine, day).items():
            times: list[float] = []
            size = 0
            for _ in range(repeat + 1):
                began = time.perf_counter()
                answer = client.get(path)
                times.append(time.perf_counter() - began)
                assert answer.status_code == 200, (path, answer.status_code)
                size = len(answer.content)
            warm = sorted(times[1:])
            measured[name] = {
                "path": path,
                "bytes": size,
                "first_ms": round(times[0] * 1000, 1),
                "median_ms": round(statistics.median(warm) * 1000, 1),
                "p95_ms": round(warm[max(0, int(len(warm) * 0.95) - 1)] * 1000, 1),
                "max_ms": round(warm[-1] * 1000, 1),
            }
    return measured


def print_pages(title: str, measured: dict[str, Any]) -> None:
    print(f"\n{title}")
    print(f"{'page':<30} {'first':>9} {'median':>9} {'p95':>9} {'slowest':>9} {'size':>10}")
    for name, m in measured.items():
        print(
            f"{name:<30} {m['first_ms']:>7.1f}ms {m['median_ms']:>7.1f}ms "
            f"{m['p95_ms']:>7.1f}ms {m['max_ms']:>7.1f}ms {m['bytes']:>9,}B"
        )


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=100_000, help="Pix received a day")
    parser.add_argument("--day", type=date.fromisoformat, default=date(2026, 3, 10))
    parser.add_argument("--history-days", type=int, default=6, help="earlier days of the same size")
    parser.add_argument("--repeat", type=int, default=20, help="requests per page after the first")
    parser.add_argument("--sqlite", action="store_true", help="also measure on SQLite")
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--json", type=Path, default=Path("dashboard-benchmark.json"))
    parser.add_argument("--keep", action="store_true", help="do not drop the database")
    args = parser.parse_args(argv)
    if args.events < 1000:
        parser.error("--events must be at least 1000 (every status needs room to appear)")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    from migrations.apply import upgrade
    from reconcile.db import create_db_engine

    plan = Plan(
        events=args.events,
        lines=args.events,
        charges=args.events // 10 + args.events // 100,
        day=args.day,
    )
    result: dict[str, Any] = {
        "benchmark": "dashboard",
        "command": " ".join(["python", "benchmarks/dashboard.py", *argv]),
        "params": {
            "events": plan.events,
            "day": plan.day.isoformat(),
            "history_days": args.history_days,
            "repeat": args.repeat,
        },
        "engine": engine_version(("dashboard", "reconcile", "migrations")),
        "target_seconds": TARGET_SECONDS,
    }
    with (
        scratch_database(psycopg_url(args.database_url), args.keep) as url,
        tempfile.TemporaryDirectory(prefix="pixrecon-bench-") as tmp,
    ):
        result["database"] = make_url(url).database
        engine = create_db_engine(url)
        upgrade(engine)
        print(f"loading {args.history_days + 1} days of {plan.events:,} Pix received")
        began = time.perf_counter()
        days = load_days(engine, plan, args.history_days)
        result["load_seconds"] = round(time.perf_counter() - began, 1)
        result["reconcile_seconds"] = reconcile_days(engine, plan, days)
        with engine.connect() as conn:
            result["rows"] = {
                table: int(conn.execute(text(f'SELECT count(*) FROM "{table}"')).scalar_one())  # noqa: S608
                for table in ("inbox_item", "pix_received", "reconciliation_item", "exception_case")
            }
            report = conn.execute(
                text(
                    "SELECT length(report) FROM reconciliation_run "
                    "WHERE business_date = :day ORDER BY id DESC LIMIT 1"
                ),
                {"day": plan.day},
            ).scalar_one()
            result["report_bytes"] = int(report)
        result["postgresql"] = measure_pages(engine, plan.day, args.repeat)
        print_pages(f"PostgreSQL, day {plan.day}, {plan.events:,} Pix", result["postgresql"])
        if args.sqlite:
            print("\ncopying into SQLite …")
            lite = copy_to_sqlite(engine, Path(tmp) / "dashboard.db")
            result["sqlite"] = measure_pages(lite, plan.day, args.repeat)
            print_pages(f"SQLite, day {plan.day}, {plan.events:,} Pix", result["sqlite"])
            lite.dispose()
        engine.dispose()
    print(f"\nrows: {result['rows']}; the day's report: {result['report_bytes']:,} bytes")
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(f"result written to {args.json}")
    slowest = max(
        m["first_ms"] for key in ("postgresql", "sqlite") for m in result.get(key, {}).values()
    )
    print(f"slowest page: {slowest:.0f} ms (aim: well under {TARGET_SECONDS * 1000:.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
