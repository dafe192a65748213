"""The retention benchmark: prune a million inbox items on PostgreSQL while the receiver's
kind of insert goes on, and say whether ingest noticed.

    python benchmarks/prune.py --items 1000000 [--database-url URL]

Creates a fresh database next to the one ``--database-url`` names, migrates it, loads
(inside PostgreSQL, ``INSERT … SELECT``) ``--items`` Pix deliveries with their raw bodies:
most older than the retention period, on business days whose latest run is
``reconciled`` (every tenth day's is ``breaks``), 1 % failed and 1 % pending, 70 % with
the ``pix_received`` row a processed Pix has (the rest stand for items no result points
at: superseded statuses, ignored items). Then it measures ingest alone for
``--baseline-seconds``, and ingest again while ``reconcile.retention.prune`` runs in a
child process of its own (as the worker's job would: never in the receiver's process).

Ingest is one delivery and its item per transaction through ``reconcile.inbox.
store_deliveries`` — the receiver's code path — at a steady ``--rate`` from a thread;
latency is the transaction's, begin to commit. Prints a table, writes the result as JSON
and drops the database (unless ``--keep``).

``--extra-sql`` runs statements after the load (an index the engine may need): for trying
a schema change before it ships. Results say so prominently.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    # Run as a script: the repository root, not benchmarks/, must be importable.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url

from benchmarks.common import DEFAULT_URL, engine_version, psycopg_url, scratch_database
from benchmarks.nightly import machine

CHILD_FLAG = "--child-spec"
RETENTION_DAYS = 90
OLD_DAYS = 60  # the span of business days the old items are spread over
REFERENCED_PER_TEN = 7  # items of ten with a result row pointing at them


# --- the child: only prune ------------------------------------------------------------


def run_child(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    from reconcile.db import create_db_engine
    from reconcile.retention import prune

    engine = create_db_engine(spec["url"])
    batches: list[float] = []
    last = [time.perf_counter()]

    def tick(_what: str, _n: int) -> None:
        now = time.perf_counter()
        batches.append(now - last[0])
        last[0] = now

    began = time.perf_counter()
    report = prune(
        engine,
        now=datetime.fromisoformat(spec["now"]),
        retention_days=spec["retention_days"],
        actor="bench:prune",
        batch=spec["batch"],
        on_progress=tick,
    )
    seconds = time.perf_counter() - began
    engine.dispose()
    Path(spec["out"]).write_text(
        json.dumps(
            {
                "seconds": seconds,
                "report": report.as_dict(),
                "batches": len(batches),
                "batch_seconds_max": max(batches, default=0.0),
                "batch_seconds_median": statistics.median(batches) if batches else 0.0,
            }
        )
    )
    return 0


# --- the data -------------------------------------------------------------------------


def load(engine: Engine, items: int, now: datetime) -> dict[str, int]:
    """Deliveries, items, references and results, generated inside PostgreSQL."""
    old = int(items * 0.95)
    cutoff = now - timedelta(days=RETENTION_DAYS)
    old_start = cutoff - timedelta(days=OLD_DAYS + 1)
    recent_start = cutoff + timedelta(days=1)
    params = {
        "n": items,
        "n_old": old,
        "old_start": old_start,
        "old_step": timedelta(days=OLD_DAYS) / max(old, 1),
        "recent_start": recent_start,
        "recent_step": timedelta(days=RETENTION_DAYS - 2) / max(items - old, 1),
        "per_ten": REFERENCED_PER_TEN,
    }
    statements = [
        """CREATE TEMP TABLE gen AS
           SELECT g, at,
                  'E18236120' || to_char(at AT TIME ZONE 'UTC', 'YYYYMMDDHH24MI')
                    || lpad(g::text, 11, '0') AS e2e,
                  CASE WHEN g % 100 = 0 THEN 'failed' WHEN g % 100 = 1 THEN 'pending'
                       ELSE 'processed' END AS status
           FROM (SELECT g, CASE WHEN g <= :n_old THEN :old_start + (g - 1) * :old_step
                                ELSE :recent_start + (g - :n_old - 1) * :recent_step END AS at
                 FROM generate_series(1, :n) g) s""",
        """CREATE TEMP TABLE body AS
           SELECT g, json_build_object(
                    'endToEndId', e2e, 'txid', 'tx' || g, 'valor', '110.00',
                    'horario', to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                    'chave', '7d9f0335-8dcc-4054-9bf9-0dbd61d36906',
                    'infoPagador', 'pedido ' || g,
                    'pagador', json_build_object(
                        'cpf', lpad((g::bigint * 7919 % 99999999999)::text, 11, '0'),
                        'nome', 'Fulana de Tal ' || g))::text AS payload
           FROM gen""",
        """INSERT INTO webhook_delivery (id, route, remote_addr, headers, item_count,
                                         received_at, body)
           SELECT gen.g, '/webhooks/qrcode/pix', '10.0.0.1', '{}', 1, at,
                  convert_to('{"pix":[' || payload || ']}', 'UTF8')
           FROM gen JOIN body USING (g)""",
        """INSERT INTO inbox_item (id, source, kind, key, payload, status, delivery_id,
                                   received_at, webhook_at, last_seen_at, webhook_count,
                                   poll_count, attempts, processed_at)
           SELECT gen.g, 'webhook', 'pix', 'pix:' || e2e, payload, status, gen.g, at, at, at,
                  1, 0, 1, CASE WHEN status = 'processed' THEN at END
           FROM gen JOIN body USING (g)""",
        "INSERT INTO inbox_ref (ref, item_id) SELECT e2e, g FROM gen",
        """INSERT INTO pix_received (end_to_end_id, txid, amount_cents, horario, chave,
                                     info_pagador, payer_document, payer_name, confirmation,
                                     confirmed_amount_cents, confirmed_at, check_attempts,
                                     inbox_item_id, created_at)
           SELECT e2e, 'tx' || g, 11000, at, '7d9f0335-8dcc-4054-9bf9-0dbd61d36906',
                  'pedido ' || g, lpad((g::bigint * 7919 % 99999999999)::text, 11, '0'),
                  'Fulana de Tal ' || g, 'confirmed', 11000, at, 1, g, at
           FROM gen WHERE status = 'processed' AND g % 10 < :per_ten""",
        "SELECT setval(pg_get_serial_sequence('webhook_delivery', 'id'), :n)",
        "SELECT setval(pg_get_serial_sequence('inbox_item', 'id'), :n)",
    ]
    with engine.begin() as conn:
        for sql in statements:
            used = {k: v for k, v in params.items() if f":{k}" in sql}
            conn.execute(text(sql), used)
        days = _business_days(old_start, cutoff + timedelta(days=RETENTION_DAYS))
        for n, day in enumerate(days):
            conn.execute(
                text(
                    "INSERT INTO reconciliation_run (business_date, started_at, finished_at, "
                    "status, exit_code, verdict) VALUES (:d, :t, :t, 'completed', :code, :v)"
                ),
                {
                    "d": day,
                    "t": now,
                    "code": 1 if n % 10 == 9 else 0,
                    "v": "breaks" if n % 10 == 9 else "reconciled",
                },
            )
        counts = {
            table: int(conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())  # noqa: S608 (constants)
            for table in ("webhook_delivery", "inbox_item", "inbox_ref", "pix_received")
        }
        counts["reconciliation_run"] = len(days)
        counts["old_items"] = old
    return counts


def _business_days(start: datetime, end: datetime) -> list[date]:
    from reconcile.timeutil import BUSINESS_TZ

    first = start.astimezone(BUSINESS_TZ).date()
    last = end.astimezone(BUSINESS_TZ).date()
    return [first + timedelta(days=n) for n in range((last - first).days + 1)]


# --- ingest meanwhile -----------------------------------------------------------------


@dataclass
class Ingest:
    """Deliveries inserted at a steady rate from a thread, each timed."""

    url: str
    rate: float
    samples: list[tuple[float, float]] = field(default_factory=list)
    """(start, seconds) of every insert, on ``time.perf_counter``."""
    late: int = 0
    errors: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        from reconcile.db import create_db_engine, session_scope
        from reconcile.inbox import Delivery, NewItem, dump_json, store_deliveries

        engine = create_db_engine(self.url)
        interval = 1.0 / self.rate
        due = time.perf_counter()
        n = 0
        while not self.stop.is_set():
            n += 1
            e2e = f"E99999999{datetime.now(UTC):%Y%m%d%H%M}{n:011d}"
            body = {"endToEndId": e2e, "valor": "1.00", "horario": datetime.now(UTC).isoformat()}
            item = NewItem(kind="pix", key=f"pix:{e2e}", payload=dump_json(body))
            delivery = Delivery(
                "/webhooks/qrcode/pix", "10.0.0.2", {}, json.dumps({"pix": [body]}).encode(), [item]
            )
            began = time.perf_counter()
            try:
                with session_scope(engine) as session:
                    store_deliveries(session, [delivery])
            except Exception as exc:  # counted and shown: the point is whether it fails
                self.errors.append(f"{type(exc).__name__}: {exc}"[:200])
            self.samples.append((began, time.perf_counter() - began))
            due += interval
            wait = due - time.perf_counter()
            if wait > 0:
                self.stop.wait(wait)
            else:
                self.late += 1
        engine.dispose()


def latency(samples: list[float]) -> dict[str, Any]:
    if not samples:
        return {"inserts": 0}
    ordered = sorted(samples)

    def pct(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000, 2)

    return {
        "inserts": len(ordered),
        "p50_ms": pct(0.50),
        "p99_ms": pct(0.99),
        "max_ms": round(ordered[-1] * 1000, 2),
        "over_100_ms": sum(1 for s in ordered if s > 0.1),
    }


# --- the parent -----------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--items", type=int, default=1_000_000, help="inbox items to load")
    parser.add_argument("--batch", type=int, default=5000, help="rows per prune transaction")
    parser.add_argument(
        "--rate", type=float, default=200.0, help="deliveries inserted per second meanwhile"
    )
    parser.add_argument(
        "--baseline-seconds", type=float, default=20.0, help="ingest alone, before the prune"
    )
    parser.add_argument(
        "--database-url",
        default=DEFAULT_URL,
        help="a PostgreSQL database; a scratch database is created beside it",
    )
    parser.add_argument(
        "--json", type=Path, default=Path("prune-benchmark.json"), help="result file"
    )
    parser.add_argument("--keep", action="store_true", help="do not drop the database")
    parser.add_argument(
        "--extra-sql",
        action="append",
        default=[],
        metavar="SQL",
        help="run after the load (not shipped: the result says so); repeatable",
    )
    return parser.parse_args(argv)


def prune_in_child(url: str, now: datetime, batch: int, workdir: Path) -> dict[str, Any]:
    spec_path, out_path = workdir / "spec.json", workdir / "out.json"
    spec = {
        "url": url,
        "now": now.isoformat(),
        "retention_days": RETENTION_DAYS,
        "batch": batch,
        "out": str(out_path),
    }
    spec_path.write_text(json.dumps(spec))
    began = time.perf_counter()
    pid = os.posix_spawn(
        sys.executable,
        [sys.executable, str(Path(__file__).resolve()), CHILD_FLAG, str(spec_path)],
        os.environ,
    )
    _, status, usage = os.wait4(pid, 0)
    ended = time.perf_counter()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"the prune process failed with exit code {code}")
    child: dict[str, Any] = json.loads(out_path.read_text())
    child["window"] = (began, ended)
    child["process_wall_seconds"] = round(ended - began, 3)
    child["peak_rss_mib"] = round(usage.ru_maxrss / 1024, 1)
    return child


def main(argv: list[str]) -> int:
    if argv[:1] == [CHILD_FLAG]:
        return run_child(argv[1])
    args = parse_args(argv)
    from migrations.apply import upgrade
    from reconcile.db import create_db_engine

    now = datetime.now(UTC)
    result: dict[str, Any] = {
        "benchmark": "prune",
        "command": " ".join(["python", "benchmarks/prune.py", *argv]),
        "params": {
            "items": args.items,
            "batch": args.batch,
            "rate": args.rate,
            "retention_days": RETENTION_DAYS,
        },
        "extra_sql": args.extra_sql,
        "engine": engine_version(),
    }
    with (
        scratch_database(psycopg_url(args.database_url), args.keep) as url,
        tempfile.TemporaryDirectory(prefix="pixrecon-bench-") as tmp,
    ):
        result["database"] = make_url(url).database
        engine = create_db_engine(url)
        result["machine"] = machine(engine)
        upgrade(engine)
        print(f"loading {args.items:,} items into {make_url(url).database}")
        began = time.perf_counter()
        result["loaded"] = load(engine, args.items, now)
        result["load_seconds"] = round(time.perf_counter() - began, 1)
        with engine.execution_options(isolation_level="AUTOCOMMIT").connect() as conn:
            for sql in args.extra_sql:
                print(f"!! extra (not shipped): {sql}")
                conn.execute(text(sql))
            conn.execute(text("VACUUM (ANALYZE)"))
            conn.execute(text("CHECKPOINT"))
        engine.dispose()

        print(f"ingest alone for {args.baseline_seconds:g} s at {args.rate:g}/s …")
        alone = Ingest(url, args.rate)
        thread = threading.Thread(target=alone.run, daemon=True)
        thread.start()
        time.sleep(args.baseline_seconds)
        alone.stop.set()
        thread.join()

        print("pruning, with ingest going on …")
        during = Ingest(url, args.rate)
        thread = threading.Thread(target=during.run, daemon=True)
        thread.start()
        child = prune_in_child(url, now, args.batch, Path(tmp))
        during.stop.set()
        thread.join()
    start, end = child.pop("window")
    report = child["report"]
    inbox = report["tables"].get("inbox_item", {"deleted": 0, "raw_removed": 0})
    released = inbox["deleted"] + inbox["raw_removed"]
    result["prune"] = {
        **child,
        "items_released": released,
        "items_per_second": round(released / child["seconds"], 1) if child["seconds"] else None,
        "rows_per_second": round(report["total"] / child["seconds"], 1)
        if child["seconds"]
        else None,
    }
    result["ingest"] = {
        "alone": latency([s for _, s in alone.samples]),
        "during_prune": latency([s for t, s in during.samples if start <= t <= end]),
        "late_alone": alone.late,
        "late_during_prune": during.late,
        "errors": alone.errors + during.errors,
    }
    result["shipped_schema"] = not args.extra_sql
    args.json.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print_result(result)
    print(f"\nresult written to {args.json}")
    return 0


def print_result(result: dict[str, Any]) -> None:
    print()
    if result["extra_sql"]:
        print("!! NOT THE SHIPPED SCHEMA: measured with these changes applied:")
        for sql in result["extra_sql"]:
            print(f"!!   {sql}")
        print()
    print(
        f"loaded in {result['load_seconds']} s: "
        + ", ".join(f"{k} {v:,}" for k, v in result["loaded"].items())
    )
    prune = result["prune"]
    report = prune["report"]
    print(
        f"prune: {prune['seconds']:.1f} s ({prune['process_wall_seconds']:.1f} s with the "
        f"process start), {prune['batches']} batches (median {prune['batch_seconds_median']:.3f}"
        f" s, longest {prune['batch_seconds_max']:.3f} s), peak RSS {prune['peak_rss_mib']} MiB"
    )
    print(
        f"  items released {prune['items_released']:,} ({prune['items_per_second']:,} items/s), "
        f"rows touched {report['total']:,} ({prune['rows_per_second']:,} rows/s)"
    )
    for table, counts in report["tables"].items():
        if not any(counts.values()):
            continue
        print(f"  {table:<22} " + ", ".join(f"{k} {v:,}" for k, v in counts.items() if v))
    print("  kept: " + ", ".join(f"{k} {v:,}" for k, v in report["kept"].items()))
    ingest = result["ingest"]
    print(
        f"{'ingest latency':<16} {'inserts':>8} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
        f"{'>100 ms':>8}"
    )
    for name in ("alone", "during_prune"):
        row = ingest[name]
        print(
            f"{name:<16} {row['inserts']:>8} {row.get('p50_ms', '-'):>8} "
            f"{row.get('p99_ms', '-'):>8} {row.get('max_ms', '-'):>8} "
            f"{row.get('over_100_ms', '-'):>8}"
        )
    if ingest["errors"]:
        print(f"ingest errors: {len(ingest['errors'])}, first: {ingest['errors'][0]}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
