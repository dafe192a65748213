"""The nightly benchmark: reconcile one business day of a million statement lines against a
million events on PostgreSQL in at most 10 s and 256 MiB of RSS (docs/design.md §7;
``--strict`` checks these).

    python benchmarks/nightly.py --events 1000000 --lines 1000000 [--database-url URL]

Creates a fresh database next to the one ``--database-url`` names, migrates it with
Alembic, loads the day inside PostgreSQL (``benchmarks/nightly_data.py``), runs
``reconcile.nightly.reconcile_day`` in a child process of its own and measures that
process: wall time from spawn to exit (interpreter start and imports included), the time
inside ``reconcile_day``, and the peak RSS the kernel reports for it (``wait4``). Prints a
table, writes the whole result as JSON, drops the database (unless ``--keep``) and, with
``--strict``, exits 1 when the target is missed.

``--extra-sql`` runs statements (an index, ``ALTER DATABASE … SET work_mem``) after the
load: for trying an engine change before it ships. Results carry them prominently,
because the published numbers must be those of the shipped schema.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    # Run as a script: the repository root, not benchmarks/, must be importable.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url

from benchmarks.common import DEFAULT_URL, engine_version, psycopg_url, scratch_database
from benchmarks.nightly_data import Generated, IdBases, Plan, generate, loader_session

TARGET_SECONDS = 10.0
TARGET_RSS_MIB = 256.0
CHILD_FLAG = "--child-spec"
PRUNE = "DELETE FROM reconciliation_item"
# The engine's first statement once every verdict is written: the report begins there.
REPORT_BEGINS = "ANALYZE reconciliation_item"
EXPLAINED = ("SELECT", "INSERT", "UPDATE", "DELETE")
REPORT_PHASE = "totals, drift, cases, report"
SETTINGS = (
    "shared_buffers",
    "work_mem",
    "maintenance_work_mem",
    "effective_cache_size",
    "max_parallel_workers_per_gather",
    "jit",
    "random_page_cost",
    "synchronous_commit",
)


# --- the child: only reconcile_day, measured from the inside as well -----------------


def _short(sql: str) -> str:
    return " ".join(sql.split())[:160]


def _explain(cursor: Any, statement: str, parameters: Any) -> str:
    """EXPLAIN ANALYZE a statement of the run inside a savepoint that is rolled back, so
    the run itself goes on unchanged (only slower: the statement executes twice)."""
    with cursor.connection.cursor() as probe:
        probe.execute("SAVEPOINT bench_explain")
        probe.execute("EXPLAIN (ANALYZE, BUFFERS) " + statement, parameters)
        plan = "\n".join(str(row[0]) for row in probe.fetchall())
        probe.execute("ROLLBACK TO SAVEPOINT bench_explain")
    return plan


def _vm_hwm_kib() -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


@dataclass
class Phase:
    name: str
    began: float


def run_child(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    # Imported here, so that the child's RSS is what a nightly process would carry.
    from reconcile.db import create_db_engine
    from reconcile.nightly import reconcile_day

    engine = create_db_engine(spec["url"])
    phase = Phase("start", time.perf_counter())
    phases: list[tuple[str, float]] = []
    statements: list[dict[str, Any]] = []
    plans: list[dict[str, Any]] = []

    def enter(name: str) -> None:
        now = time.perf_counter()
        phases.append((phase.name, now - phase.began))
        phase.name, phase.began = name, now

    def _before(
        conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
    ) -> tuple[str, Any]:
        if statement.startswith(PRUNE):
            enter("prune earlier runs")
        if statement.startswith(REPORT_BEGINS):
            enter(REPORT_PHASE)
        # An executemany's parameters are a list of sets: explaining one would not be the
        # statement as run, so those are timed only.
        if spec["explain"] and not many and statement.lstrip().upper().startswith(EXPLAINED):
            plans.append(
                {
                    "phase": phase.name,
                    "sql": statement,
                    "plan": _explain(cursor, statement, parameters),
                }
            )
        conn.info["bench_t0"] = time.perf_counter()
        return statement, parameters

    event.listen(engine, "before_cursor_execute", _before, retval=True)

    @event.listens_for(engine, "after_cursor_execute")
    def _after(
        conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
    ) -> None:
        seconds = time.perf_counter() - conn.info.pop("bench_t0")
        statements.append(
            {
                "phase": phase.name,
                "seconds": round(seconds, 4),
                "rows": cursor.rowcount,
                "sql": _short(statement),
                # The engine's own threads name what ran beside the run's transaction.
                "thread": threading.current_thread().name,
            }
        )

    with engine.connect() as conn:
        backend = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
    began = time.perf_counter()
    result = reconcile_day(
        engine,
        date.fromisoformat(spec["day"]),
        now=datetime.fromisoformat(spec["now"]),
        on_step=enter,
    )
    seconds = time.perf_counter() - began
    enter("done")
    engine.dispose()
    Path(spec["out"]).write_text(
        json.dumps(
            {
                "reconcile_day_seconds": seconds,
                "phases": {name: round(s, 3) for name, s in phases if name != "start"},
                "statements": statements,
                "plans": plans,
                "report": result.summary,
                "exit_code": result.exit_code,
                "vm_hwm_kib": _vm_hwm_kib(),
                "first_backend_pid": backend,
            },
            default=str,
        )
    )
    return 0


# --- the parent: database, data, measurement, report -------------------------------


def machine(engine: Engine) -> dict[str, Any]:
    mem_kib = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem_kib = int(line.split()[1])
    with engine.connect() as conn:
        version = conn.execute(text("SHOW server_version")).scalar_one()
        settings = {name: conn.execute(text(f"SHOW {name}")).scalar_one() for name in SETTINGS}
    return {
        "nproc": len(os.sched_getaffinity(0)),
        "mem_total_gib": round(mem_kib / 1024 / 1024, 1),
        "cpu": _cpu_model(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "postgresql": version,
        "postgresql_settings": settings,
    }


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def _temp_usage(engine: Engine) -> tuple[int, int]:
    with engine.connect() as conn:
        conn.execute(text("SELECT pg_stat_clear_snapshot()"))
        files, size = conn.execute(
            text(
                "SELECT temp_files, temp_bytes FROM pg_stat_database "
                "WHERE datname = current_database()"
            )
        ).one()
    return int(files), int(size)


def measure(
    url: str, plan: Plan, now: datetime, explain: bool, workdir: Path, n: int
) -> dict[str, Any]:
    """One reconcile_day in a child process: its wall time and peak RSS (from wait4)."""
    spec_path, out_path = workdir / f"spec-{n}.json", workdir / f"out-{n}.json"
    spec = {
        "url": url,
        "day": plan.day.isoformat(),
        "now": now.isoformat(),
        "out": str(out_path),
        "explain": explain,
    }
    spec_path.write_text(json.dumps(spec))
    stats = create_engine(url)
    temp_before = _temp_usage(stats)
    began = time.perf_counter()
    pid = os.posix_spawn(
        sys.executable,
        [sys.executable, str(Path(__file__).resolve()), CHILD_FLAG, str(spec_path)],
        os.environ,
    )
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - began
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"the reconciliation process failed with exit code {code}")
    time.sleep(0.5)  # the backend's statistics reach pg_stat_database when it exits
    temp_after = _temp_usage(stats)
    stats.dispose()
    child = json.loads(out_path.read_text())
    return {
        "process_wall_seconds": round(wall, 3),
        "reconcile_day_seconds": round(child["reconcile_day_seconds"], 3),
        # Linux reports ru_maxrss in KiB.
        "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
        "cpu_user_seconds": round(usage.ru_utime, 2),
        "cpu_system_seconds": round(usage.ru_stime, 2),
        "temp_files": temp_after[0] - temp_before[0],
        "temp_bytes": temp_after[1] - temp_before[1],
        "phases": child["phases"],
        "statements": child["statements"],
        "plans": child["plans"],
        "report": child["report"],
        "exit_code": child["exit_code"],
    }


def summarize_report(report: dict[str, Any]) -> dict[str, Any]:
    return {
        "movements": report["counts"],
        "charges": report["charges"],
        "payouts": report["payouts"],
        "infractions": report["infractions"],
        "totals": report["totals"],
        "balance_drift_cents": report["balance_drift_cents"],
        "balance": report["balance"],
        "open_exceptions": report["open_exceptions"],
    }


def _fmt_counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v:,}" for k, v in sorted(counts.items()))


def print_result(result: dict[str, Any]) -> None:
    runs = result["runs"]
    gen = result["generated"]
    print()
    if result["extra_sql"]:
        print("!! NOT THE SHIPPED ENGINE: measured with these changes applied:")
        for sql in result["extra_sql"]:
            print(f"!!   {sql}")
        print()
    history = gen["history_rows"]
    print(f"rows generated ({gen['seconds']:.1f} s, then {result['prepare']})")
    if history:
        print(f"  {'':<20} {'the day':>12} {'history':>12}")
    for table, count in sorted(gen["rows"].items()):
        print(f"  {table:<20} {count:>12,}" + (f" {history.get(table, 0):>12,}" if history else ""))
    print(
        f"  Pix booked {gen['booked_pix']:,}, not in the statement yet {gen['unbooked_pix']:,}, "
        f"statement-only credits {gen['statement_only_credits']:,}"
    )
    print()
    print(f"{'run':<5}{'process wall':>14}{'reconcile_day':>15}{'peak RSS':>12}{'temp files':>13}")
    for i, run in enumerate(runs, 1):
        print(
            f"{i:<5}{run['process_wall_seconds']:>12.2f} s{run['reconcile_day_seconds']:>13.2f} s"
            f"{run['peak_rss_mib']:>8.1f} MiB{run['temp_bytes'] / 2**20:>9.1f} MiB"
        )
    phases = runs[0]["phases"]
    print("phases of run 1: " + ", ".join(f"{k} {v:.2f} s" for k, v in phases.items()))
    summary = result["report"]
    print()
    print(f"movements   {_fmt_counts(summary['movements'])}")
    print(f"charges     {_fmt_counts(summary['charges'])}")
    print(f"payouts     {_fmt_counts(summary['payouts'])}")
    print(f"infractions {_fmt_counts(summary['infractions'])}")
    print(
        f"open exceptions {summary['open_exceptions']:,}; "
        f"balance drift {summary['balance_drift_cents']} cents"
    )
    target = result["target"]
    verdict = "MET" if target["met"] else "MISSED"
    print()
    print(
        f"target ≤ {TARGET_SECONDS:.0f} s and ≤ {TARGET_RSS_MIB:.0f} MiB: {verdict} "
        f"(worst run: {target['worst_process_wall_seconds']:.2f} s, "
        f"{target['worst_peak_rss_mib']:.1f} MiB)"
    )


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=1_000_000, help="Pix received")
    parser.add_argument("--lines", type=int, default=None, help="statement lines (default: events)")
    parser.add_argument(
        "--charges", type=int, default=None, help="expected payments (default: 11 %% of events)"
    )
    parser.add_argument("--day", type=date.fromisoformat, default=date(2026, 3, 10))
    parser.add_argument(
        "--history-days",
        type=int,
        default=0,
        help="load this many earlier days of the same size first (the database of a "
        "deployment that has been running); only --day is reconciled",
    )
    parser.add_argument(
        "--database-url",
        default=DEFAULT_URL,
        help="an existing database to connect to; the benchmark creates its own beside it",
    )
    parser.add_argument(
        "--json", type=Path, default=Path("nightly-benchmark.json"), help="result file"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=2,
        help="reconcile the day this many times; from the second run on, each run also "
        "prunes the previous run's verdicts, as every run after the worker's do",
    )
    parser.add_argument("--keep", action="store_true", help="do not drop the database")
    parser.add_argument("--strict", action="store_true", help="exit 1 when the target is missed")
    parser.add_argument(
        "--no-vacuum",
        action="store_true",
        help="skip VACUUM ANALYZE after the load (planner without statistics)",
    )
    parser.add_argument(
        "--extra-sql",
        action="append",
        default=[],
        help="statement run after the load (e.g. CREATE INDEX …); flagged in the results",
    )
    parser.add_argument(
        "--explain",
        type=Path,
        default=None,
        help="also write EXPLAIN (ANALYZE, BUFFERS) of every statement of the run here "
        "(the run then executes each statement twice: its timings are not results)",
    )
    args = parser.parse_args(argv)
    if args.lines is None:
        args.lines = args.events
    if args.charges is None:
        args.charges = args.events // 10 + args.events // 100
    if args.events < 1000:
        parser.error("--events must be at least 1000 (every status needs room to appear)")
    return args


def main(argv: list[str]) -> int:
    if argv[:1] == [CHILD_FLAG]:
        return run_child(argv[1])
    args = parse_args(argv)
    from migrations.apply import upgrade
    from reconcile.db import create_db_engine

    plan = Plan(events=args.events, lines=args.lines, charges=args.charges, day=args.day)
    now = plan.end + timedelta(hours=2)  # the night after the business day
    admin_url = psycopg_url(args.database_url)
    result: dict[str, Any] = {
        "benchmark": "nightly",
        "command": " ".join(["python", "benchmarks/nightly.py", *argv]),
        "params": {
            "events": plan.events,
            "lines": plan.lines,
            "charges": plan.charges,
            "payouts": plan.payouts,
            "infractions": plan.infractions,
            "day": plan.day.isoformat(),
            "history_days": args.history_days,
            "now": now.isoformat(),
        },
        "extra_sql": args.extra_sql,
        "engine": engine_version(),
    }
    with (
        scratch_database(admin_url, args.keep) as url,
        tempfile.TemporaryDirectory(prefix="pixrecon-bench-") as tmp,
    ):
        result["database"] = make_url(url).database
        engine = create_db_engine(url)
        result["machine"] = machine(engine)
        upgrade(engine)
        print(
            f"loading {plan.events:,} events and {plan.lines:,} statement lines "
            f"into {make_url(url).database}"
        )
        began = time.perf_counter()
        with engine.connect() as conn:
            loader_session(conn)
            bases, history = IdBases(), Generated()
            for back in range(args.history_days, 0, -1):
                earlier = replace(plan, day=plan.day - timedelta(days=back))
                print(f"  history: {earlier.day} …")
                for table, count in generate(
                    conn, earlier, bases=bases, measured=False
                ).rows.items():
                    history.add(table, count)
            generated = generate(conn, plan, bases=bases)
        result["generated"] = {
            "seconds": round(time.perf_counter() - began, 1),
            "rows": generated.rows,
            "history_rows": history.rows,
            "booked_pix": generated.booked_pix,
            "unbooked_pix": generated.unbooked_pix,
            "statement_only_credits": generated.statement_only_credits,
            "steps": {k: round(v, 2) for k, v in generated.steps.items()},
        }
        autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
        with autocommit.connect() as conn:
            for sql in args.extra_sql:
                print(f"!! extra (not shipped): {sql}")
                conn.execute(text(sql))
            # Autovacuum would have analyzed tables that filled up over a day; a bulk load
            # has to do it by hand, or the planner works blind and hint bits get set
            # (and written) during the measured run.
            result["prepare"] = "no VACUUM" if args.no_vacuum else "VACUUM (ANALYZE)"
            if not args.no_vacuum:
                conn.execute(text("VACUUM (ANALYZE)"))
            # Flush the load's dirty pages now rather than during the measured run.
            conn.execute(text("CHECKPOINT"))
        engine.dispose()
        runs = []
        for n in range(1, args.repeat + 1):
            print(f"reconciling {plan.day} (run {n} of {args.repeat}) …")
            runs.append(measure(url, plan, now, args.explain is not None, Path(tmp), n))
    if args.explain is not None:
        with args.explain.open("w") as f:
            for item in runs[0]["plans"]:
                f.write(f"-- phase: {item['phase']}\n{item['sql']}\n\n{item['plan']}\n\n")
        print(f"plans written to {args.explain} (timings of this run include EXPLAIN)")
    for run in runs:
        run.pop("plans")
    result["report"] = summarize_report(runs[0].pop("report"))
    for run in runs[1:]:
        run.pop("report")
    worst_wall = max(r["process_wall_seconds"] for r in runs)
    worst_rss = max(r["peak_rss_mib"] for r in runs)
    result["runs"] = runs
    result["target"] = {
        "seconds": TARGET_SECONDS,
        "rss_mib": TARGET_RSS_MIB,
        "median_process_wall_seconds": statistics.median(r["process_wall_seconds"] for r in runs),
        "worst_process_wall_seconds": worst_wall,
        "worst_peak_rss_mib": worst_rss,
        "met": worst_wall <= TARGET_SECONDS and worst_rss <= TARGET_RSS_MIB,
        "shipped_engine": not args.extra_sql,
    }
    args.json.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print_result(result)
    print(f"\nresult written to {args.json}")
    if args.strict and not result["target"]["met"]:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
