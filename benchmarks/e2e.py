"""The end-to-end benchmark (docs/design.md §7): webhook deliveries to processed inbox
items to ``pix_received`` rows, through the real receiver and the real workers.

    python benchmarks/e2e.py [--seconds 20] [--rate 2000] [--connections 64]
                             [--backlog 50000] [--receivers 1] [--processes 2]
                             [--threads 8]
                             [--single-node] [--profile DIR]

Production mode (the default) runs a fresh PostgreSQL database, ``pixrecon serve`` (one
process, ``PIXRECON_BROKER_URL`` set; ``--receivers N`` runs N, each on a port of its
own, the load generator's connections spread over them as a load balancer would) and
``pixrecon worker --processes 2 --threads 8`` on Redis, scheduler off. ``--single-node``
runs ``pixrecon serve`` alone on a fresh SQLite file, without a broker: its in-process
workers (``PIXRECON_WORKER_THREADS``, its default) do the processing. Every request
carries one Pix in the BCB callback shape with its own ``endToEndId``
(``benchmarks/ingest.py``'s request builder) and the shared-secret header. The load comes
from ``benchmarks/loadgen.py`` in this process. Phases:

1. sustained rate: an open loop at ``--rate`` deliveries/s for ``--seconds``. Reported:
   deliveries offered, acknowledged (their inbox ``received_at`` within the window) and
   processed (``processed_at`` within the window) per second; the lag ``received_at`` →
   ``processed_at`` of the phase's items (p50/p99/max, the inbox's own timestamps); the
   items still pending at the window's end and how long after it the last was processed.
   The workers *kept up* when the acknowledgement p99 (measured from when each request
   was due) and the tail after the window are both within the lag target; the rate is
   *sustained* when they kept up at ``--rate`` ≥ 2,000/s with every delivery answered 2xx
   and the lag p99 within 2 s;
2. saturation: a closed loop of ``--connections`` for ``--seconds``: acknowledged/s (load
   generator) and processed/s (``processed_at`` within the window);
3. backlog drain (production mode only: in single-node mode the workers live in the
   receiver's process and cannot be stopped while it ingests, so the phase is skipped):
   with the worker stopped, ``--backlog`` deliveries are ingested; then the worker starts
   and the rate is ``count / (last processed_at - worker start)``, the start being when
   its process was spawned (interpreter start and imports included);
4. peak RSS (``VmHWM``) of the receiver and of every process of the ``pixrecon worker``
   tree, read just before each is stopped;
5. exactly once: every acknowledged delivery is one inbox item and one ``pix_received``
   row (counts, distinct ``endToEndId``, sum of amounts against the inbox payloads and,
   when every request was acknowledged, against the requests sent), none pending or
   failed.

``--profile DIR`` records ``py-spy`` (raw collapsed stacks, non-idle samples) of the
receiver and of the worker tree during the sustained phase. Prints a table, writes the
result as JSON and drops the database (unless ``--keep``); ``--strict`` exits 1 when a
target is missed. The exactly-once check failing always exits 1.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    # Run as a script: the repository root, not benchmarks/, must be importable.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import Engine, func, select, text
from sqlalchemy.engine import make_url
from sqlmodel import col

from benchmarks.common import DEFAULT_URL, engine_version
from benchmarks.ingest import (
    DEFAULT_BROKER,
    _free_port,
    _vm_hwm_mib,
    pix_request,
    production_stores,
    receiver_process,
    server,
)
from benchmarks.loadgen import LoadResult, MakeRequest, closed, open_loop, run_load
from reconcile.db import create_db_engine
from reconcile.models import InboxItem, ItemStatus
from reconcile.settings import Settings
from reconcile.timeutil import as_utc

ROOT = Path(__file__).resolve().parent.parent
TARGET_RATE = 2000.0
TARGET_LAG_P99_S = 2.0
TARGET_DRAIN_RATE = 2500.0
TARGET_RECEIVER_MIB = 150.0
TARGET_WORKER_MIB = 200.0
WEBHOOK_HEADER = "X-Webhook-Secret"


# --- processes -------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (from /proc/*/stat), children first."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        kids = sorted(parents.get(todo.pop(0), []))
        found.extend(kids)
        todo.extend(kids)
    return found


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


def _tree_hwm(pid: int) -> list[dict[str, Any]]:
    """Peak RSS of ``pid`` and each of its descendants (Python processes only: a py-spy
    attached to them is not theirs)."""
    rows = []
    for each in [pid, *_children(pid)]:
        command = _cmdline(each)
        if "py-spy" in command:
            continue
        rows.append({"pid": each, "command": command[:120], "peak_rss_mib": _vm_hwm_mib(each)})
    return rows


@contextmanager
def worker_process(env: dict[str, str], processes: int, threads: int) -> Iterator[WorkerTree]:
    """``pixrecon worker`` until the block ends; its tree's peak RSS read just before."""
    command = [sys.executable, "-m", "pixrecon", "worker"]
    command += ["--processes", str(processes), "--threads", str(threads)]
    started = time.time()
    process = subprocess.Popen(command, cwd=ROOT, env=env)
    tree = WorkerTree(process.pid, started)
    try:
        yield tree
        tree.peaks = _tree_hwm(process.pid)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if process.returncode not in (0, -signal.SIGTERM) and tree.peaks is not None:
        print(f"worker exited with {process.returncode}")


@dataclass
class WorkerTree:
    pid: int
    started: float
    peaks: list[dict[str, Any]] | None = None


@contextmanager
def profiled(directory: Path | None, name: str, pid: int, seconds: float) -> Iterator[None]:
    """``py-spy record`` of ``pid`` and its subprocesses for ``seconds`` (when asked)."""
    if directory is None:
        yield
        return
    directory.mkdir(parents=True, exist_ok=True)
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    command = [py_spy, "record", "--pid", str(pid), "--duration", str(max(int(seconds), 1))]
    command += ["--format", "raw", "--output", str(directory / f"{name}.txt")]
    command += ["--subprocesses", "--threads", "--nonblocking", "--rate", "100"]
    spy = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        try:
            spy.wait(seconds + 30)
        except subprocess.TimeoutExpired:
            spy.terminate()
            spy.wait()


# --- the inbox, read through the database ----------------------------------------------


class Inbox:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def last_id(self) -> int:
        with self.engine.connect() as conn:
            value = conn.execute(select(func.max(col(InboxItem.id)))).scalar_one_or_none()
        return int(value or 0)

    def pending(self) -> int:
        stmt = select(func.count()).where(col(InboxItem.status) == ItemStatus.PENDING.value)
        with self.engine.connect() as conn:
            return int(conn.execute(stmt).scalar_one())

    def wait_drained(self, timeout: float) -> float | None:
        """Seconds until nothing is pending (``None``: still pending after ``timeout``)."""
        began = time.monotonic()
        while time.monotonic() - began < timeout:
            if self.pending() == 0:
                return time.monotonic() - began
            time.sleep(0.2)
        return None

    def times(self, after: int, upto: int) -> list[tuple[float, float | None]]:
        """(received_at, processed_at) as epoch seconds of the items ``after < id <= upto``."""
        stmt = (
            select(col(InboxItem.received_at), col(InboxItem.processed_at))
            .where(col(InboxItem.id) > after, col(InboxItem.id) <= upto)
            .order_by(col(InboxItem.id))
        )
        with self.engine.connect() as conn:
            return [
                (as_utc(r).timestamp(), as_utc(p).timestamp() if p is not None else None)
                for r, p in conn.execute(stmt)
            ]


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    cuts = statistics.quantiles(values, n=1000, method="inclusive")
    return cuts[min(int(q * 1000) - 1, len(cuts) - 1)]


def _r(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def _load(result: LoadResult) -> dict[str, Any]:
    summary = result.summary()
    summary["acknowledged"] = result.ok
    return summary


# --- phases ----------------------------------------------------------------------------


@dataclass
class Bench:
    args: argparse.Namespace
    ports: list[int]
    make: MakeRequest
    counter: itertools.count[int]
    inbox: Inbox
    acknowledged: int = 0

    def count(self, result: LoadResult) -> LoadResult:
        self.acknowledged += result.ok
        return result

    def warm_up(self) -> dict[str, Any]:
        """A second of closed loop, then wait for the workers: connections open, code
        paths and caches warm, and the workers proven up before anything is measured."""
        warm = self.count(
            run_load(
                closed(
                    "127.0.0.1",
                    self.ports,
                    self.make,
                    connections=min(self.args.connections, 8),
                    seconds=1.0,
                    counter=self.counter,
                )
            )
        )
        drained = self.inbox.wait_drained(self.args.drain_timeout)
        if drained is None:
            raise RuntimeError("the warm-up deliveries were never processed: no worker?")
        return {**_load(warm), "drained_after_s": _r(drained)}

    def sustained(self, profile: list[tuple[str, int]]) -> dict[str, Any]:
        args = self.args
        before = self.inbox.last_id()
        with ExitStack() as stack:
            for name, pid in profile:
                stack.enter_context(profiled(args.profile, name, pid, args.seconds))
            began = time.time() + 0.05  # open_loop's first request falls due 50 ms in
            paced = self.count(
                run_load(
                    open_loop(
                        "127.0.0.1",
                        self.ports,
                        self.make,
                        rate=args.rate,
                        seconds=args.seconds,
                        connections=args.open_connections,
                        counter=self.counter,
                    )
                )
            )
            loop_ended = time.time()
            drained = self.inbox.wait_drained(args.drain_timeout)
        after = self.inbox.last_id()
        end = began + args.seconds
        times = self.inbox.times(before, after)
        received = [r for r, _ in times]
        processed = [p for _, p in times if p is not None]
        lags = sorted(p - r for r, p in times if p is not None)
        acked_in_window = sum(1 for r in received if r <= end)
        pending_at_end = sum(1 for r, p in times if r <= end and (p is None or p > end))
        last_processed = max(processed) if processed else None
        tail = last_processed - end if last_processed is not None else None
        p99_ack = paced.percentile_ms(0.99)
        lag_p99 = _percentile(lags, 0.99)
        kept_up = (
            drained is not None
            and p99_ack is not None
            and p99_ack / 1000 <= TARGET_LAG_P99_S
            and tail is not None
            and tail <= TARGET_LAG_P99_S
        )
        return {
            "load": _load(paced),
            "offered_per_second": args.rate,
            "offered": int(args.rate * args.seconds),
            "window_seconds": args.seconds,
            "load_seconds": _r(loop_ended - began),
            "items": len(times),
            "acknowledged_per_second_in_window": _r(acked_in_window / args.seconds, 1),
            "processed_per_second_in_window": _r(
                sum(1 for p in processed if began <= p <= end) / args.seconds, 1
            ),
            "end_to_end_per_second": _r(
                len(processed) / (last_processed - began) if last_processed else None, 1
            ),
            "lag_p50_s": _r(_percentile(lags, 0.50)),
            "lag_p99_s": _r(lag_p99),
            "lag_max_s": _r(lags[-1] if lags else None),
            "not_acknowledged_at_window_end": len(times) - acked_in_window,
            "pending_at_window_end": pending_at_end,
            "tail_after_window_s": _r(tail),
            "tail_after_last_ack_s": _r(
                last_processed - max(received) if last_processed and received else None
            ),
            "drained": drained is not None,
            "kept_up": kept_up,
        }

    def saturation(self) -> dict[str, Any]:
        args = self.args
        before = self.inbox.last_id()
        began = time.time()
        result = self.count(
            run_load(
                closed(
                    "127.0.0.1",
                    self.ports,
                    self.make,
                    connections=args.connections,
                    seconds=args.seconds,
                    counter=self.counter,
                )
            )
        )
        end = time.time()
        drained = self.inbox.wait_drained(args.drain_timeout)
        times = self.inbox.times(before, self.inbox.last_id())
        in_window = sum(1 for _, p in times if p is not None and began <= p <= end)
        lags = sorted(p - r for r, p in times if p is not None)
        return {
            "load": _load(result),
            "acknowledged_per_second": result.summary()["requests_per_second"],
            "processed_per_second_in_window": _r(in_window / (end - began), 1),
            "pending_at_window_end": sum(
                1 for r, p in times if r <= end and (p is None or p > end)
            ),
            "lag_p50_s": _r(_percentile(lags, 0.50)),
            "lag_p99_s": _r(_percentile(lags, 0.99)),
            "drained": drained is not None,
        }

    def ingest_backlog(self) -> dict[str, Any]:
        """``--backlog`` deliveries as fast as the receiver takes them: every request is
        due within the first second, so the connections send back to back."""
        args = self.args
        began = time.time()
        result = self.count(
            run_load(
                open_loop(
                    "127.0.0.1",
                    self.ports,
                    self.make,
                    rate=float(args.backlog),
                    seconds=1.0,
                    connections=args.connections,
                    counter=self.counter,
                )
            )
        )
        seconds = time.time() - began
        return {
            "load": _load(result),
            "seconds": _r(seconds),
            "acknowledged_per_second": _r(result.ok / seconds, 1),
        }


def _drain(bench: Bench, tree: WorkerTree, before: int, after: int) -> dict[str, Any]:
    drained = bench.inbox.wait_drained(bench.args.drain_timeout)
    times = bench.inbox.times(before, after)
    processed = sorted(p for _, p in times if p is not None)
    result: dict[str, Any] = {"items": len(times), "drained": drained is not None}
    if processed:
        last = processed[-1]
        result |= {
            "seconds_from_worker_start": _r(last - tree.started),
            "items_per_second": _r(len(processed) / (last - tree.started), 1),
            "first_processed_after_start_s": _r(processed[0] - tree.started),
            "items_per_second_after_first": _r(
                len(processed) / (last - processed[0]) if last > processed[0] else None, 1
            ),
        }
    return result


# --- exactly once ----------------------------------------------------------------------


def _cents(valor: str) -> int:
    return int(Decimal(valor) * 100)


def _request_cents(make: MakeRequest, n: int) -> int:
    body = make(n).split(b"\r\n\r\n", 1)[1]
    return sum(_cents(pix["valor"]) for pix in json.loads(body)["pix"])


def exactly_once(
    engine: Engine, acknowledged: int, issued: int, make: MakeRequest
) -> dict[str, Any]:
    with engine.connect() as conn:

        def one(sql: str) -> Any:
            return conn.execute(text(sql)).scalar_one()

        statuses: dict[str, int] = dict(
            conn.execute(text("SELECT status, count(*) FROM inbox_item GROUP BY status")).all()
        )
        payload_cents = sum(
            _cents(json.loads(payload)["valor"])
            for (payload,) in conn.execute(text("SELECT payload FROM inbox_item"))
        )
        check = {
            "acknowledged": acknowledged,
            "requests_sent": issued,
            "deliveries": one("SELECT count(*) FROM webhook_delivery"),
            "inbox_items": one("SELECT count(*) FROM inbox_item"),
            "pix_received": one("SELECT count(*) FROM pix_received"),
            "distinct_end_to_end_ids": one(
                "SELECT count(DISTINCT end_to_end_id) FROM pix_received"
            ),
            "distinct_inbox_item_ids": one(
                "SELECT count(DISTINCT inbox_item_id) FROM pix_received"
            ),
            "items_without_pix": one(
                "SELECT count(*) FROM inbox_item i LEFT JOIN pix_received p"
                " ON p.inbox_item_id = i.id WHERE p.id IS NULL"
            ),
            "pending": int(statuses.get(ItemStatus.PENDING.value, 0)),
            "failed": int(statuses.get(ItemStatus.FAILED.value, 0)),
            "statuses": {str(k): int(v) for k, v in statuses.items()},
            "pix_amount_cents": int(one("SELECT coalesce(sum(amount_cents), 0) FROM pix_received")),
            "inbox_amount_cents": payload_cents,
        }
    # Which requests were acknowledged is known only when all of them were.
    check["sent_amount_cents"] = (
        sum(_request_cents(make, n) for n in range(issued)) if issued == acknowledged else None
    )
    counts = {
        check[k]
        for k in (
            "acknowledged",
            "deliveries",
            "inbox_items",
            "pix_received",
            "distinct_end_to_end_ids",
            "distinct_inbox_item_ids",
        )
    }
    amounts = {check["pix_amount_cents"], check["inbox_amount_cents"]}
    if check["sent_amount_cents"] is not None:
        amounts.add(check["sent_amount_cents"])
    check["passed"] = (
        len(counts) == 1
        and acknowledged > 0
        and len(amounts) == 1
        and check["items_without_pix"] == 0
        and check["pending"] == 0
        and check["failed"] == 0
    )
    return check


# --- the two modes ---------------------------------------------------------------------


def _receiver(
    args: argparse.Namespace, port: int, database_url: str, secret: str
) -> tuple[list[str], dict[str, str]]:
    broker = None if args.single_node else args.broker_url
    command, env = receiver_process(port, database_url, broker, WEBHOOK_HEADER, secret)
    env["PIXRECON_WORKER_METRICS_PORT"] = "0"
    if args.single_node:
        env.pop("PIXRECON_WORKER_THREADS", None)
    return command, env


def measure(args: argparse.Namespace, database_url: str) -> dict[str, Any]:
    from migrations.apply import upgrade

    engine = create_db_engine(database_url)
    upgrade(engine)
    secret = secrets.token_urlsafe(16)
    run = secrets.token_hex(2)  # 4 characters: endToEndIds stay 32 long
    make = pix_request(WEBHOOK_HEADER, secret, run)
    counter = itertools.count()
    results: dict[str, Any] = {}
    ports = [_free_port() for _ in range(args.receivers)]
    bench = Bench(args, ports, make, counter, Inbox(engine))
    try:
        with ExitStack() as receivers:
            # Several receivers are several `pixrecon serve` processes, each on a port of
            # its own, as behind a load balancer (docs/design.md §6).
            pids = []
            for port in ports:
                command, env = _receiver(args, port, database_url, secret)
                pids.append(receivers.enter_context(server(command, port, env)))
            named = [
                ("receiver" if len(pids) == 1 else f"receiver-{n}", pid)
                for n, pid in enumerate(pids, 1)
            ]
            if args.single_node:
                _load_phases(bench, results, named)
                results["drain"] = {
                    "skipped": "single-node mode: the workers run inside the receiver's "
                    "process and cannot be stopped while it ingests"
                }
                results["worker_processes"] = []
            else:
                with worker_process(env, args.processes, args.threads) as first:
                    _load_phases(bench, results, [*named, ("worker", first.pid)])
                results["drain"] = _backlog_phase(bench, env)
                results["worker_processes"] = [first.peaks, results["drain"].pop("peaks")]
            peaks = [_vm_hwm_mib(pid) for pid in pids]
            results["receivers_peak_rss_mib"] = peaks
            results["receiver_peak_rss_mib"] = max(
                (peak for peak in peaks if peak is not None), default=None
            )
    finally:
        issued = next(counter)
        results["exactly_once"] = exactly_once(engine, bench.acknowledged, issued, make)
        engine.dispose()
    return results


def _load_phases(bench: Bench, results: dict[str, Any], profile: list[tuple[str, int]]) -> None:
    args = bench.args
    print("warm-up: 1 s closed loop, then wait for the workers …")
    results["warm_up"] = bench.warm_up()
    print(f"sustained: open loop at {args.rate:.0f}/s for {args.seconds:.0f} s …")
    results["sustained"] = bench.sustained(profile)
    print(f"saturation: closed loop, {args.connections} connections, {args.seconds:.0f} s …")
    results["saturation"] = bench.saturation()


def _backlog_phase(bench: Bench, env: dict[str, str]) -> dict[str, Any]:
    args = bench.args
    print(f"backlog: {args.backlog} deliveries with the worker stopped …")
    before = bench.inbox.last_id()
    ingest = bench.ingest_backlog()
    after = bench.inbox.last_id()
    pending = bench.inbox.pending()
    print(f"backlog: {pending} pending; starting the worker …")
    with worker_process(env, args.processes, args.threads) as tree:
        drain = _drain(bench, tree, before, after)
    return {"ingest": ingest, "pending_at_start": pending, **drain, "peaks": tree.peaks}


# --- targets and output ----------------------------------------------------------------


def targets(args: argparse.Namespace, results: dict[str, Any]) -> dict[str, Any]:
    s = results["sustained"]
    lag = s["lag_p99_s"]
    statuses = s["load"]["statuses"]
    all_2xx = s["load"]["errors"] == 0 and all(k.startswith("2") for k in statuses)
    drain = results["drain"].get("items_per_second")
    receiver = results["receiver_peak_rss_mib"]
    worker_peaks = [
        p["peak_rss_mib"]
        for tree in results["worker_processes"]
        for p in tree or []
        if p["peak_rss_mib"] is not None
    ]
    worker = max(worker_peaks) if worker_peaks else None
    t: dict[str, Any] = {
        "sustained_rate": args.rate,
        "sustained_met": bool(
            args.rate >= TARGET_RATE
            and s["kept_up"]
            and all_2xx
            and lag is not None
            and lag <= TARGET_LAG_P99_S
        ),
        "lag_p99_s": lag,
        "lag_met": lag is not None and lag <= TARGET_LAG_P99_S,
        "drain_per_second": drain,
        "drain_met": None if args.single_node else drain is not None and drain >= TARGET_DRAIN_RATE,
        "receiver_peak_rss_mib": receiver,
        "receiver_rss_met": receiver is not None and receiver <= TARGET_RECEIVER_MIB,
        "worker_peak_rss_mib": worker,
        "worker_rss_met": None
        if args.single_node
        else worker is not None and worker <= TARGET_WORKER_MIB,
    }
    t["all_met"] = all(v is not False for k, v in t.items() if k.endswith("_met"))
    return t


def _verdict(met: bool | None) -> str:
    return "n/a" if met is None else ("met" if met else "MISSED")


def print_result(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    r, p, t = result["results"], result["params"], result["targets"]
    mode = "single node, SQLite" if p["single_node"] else "PostgreSQL + Redis"
    table = Table(title=f"end to end ({mode}): deliveries → pix_received")
    table.add_column("phase")
    table.add_column("measure")
    table.add_column("value", justify="right")
    s = r["sustained"]
    rows: list[tuple[str, str, Any]] = [
        ("sustained", "offered /s", s["offered_per_second"]),
        ("", "acknowledged /s (in window)", s["acknowledged_per_second_in_window"]),
        ("", "processed /s (in window)", s["processed_per_second_in_window"]),
        ("", "end to end /s (items / last processed)", s["end_to_end_per_second"]),
        ("", "ack p50 / p99 ms", f"{s['load']['p50_ms']} / {s['load']['p99_ms']}"),
        ("", "lag p50 / p99 / max s", f"{s['lag_p50_s']} / {s['lag_p99_s']} / {s['lag_max_s']}"),
        (
            "",
            "not acked / pending at window end",
            f"{s['not_acknowledged_at_window_end']} / {s['pending_at_window_end']}",
        ),
        (
            "",
            "tail after window / after last ack s",
            f"{s['tail_after_window_s']} / {s['tail_after_last_ack_s']}",
        ),
        ("", "kept up", s["kept_up"]),
    ]
    sat = r["saturation"]
    rows += [
        ("saturation", "acknowledged /s", sat["acknowledged_per_second"]),
        ("", "processed /s (in window)", sat["processed_per_second_in_window"]),
        ("", "pending at window end", sat["pending_at_window_end"]),
    ]
    d = r["drain"]
    if "skipped" in d:
        rows.append(("drain", "skipped", d["skipped"]))
    else:
        rows += [
            ("drain", "backlog ingested /s", d["ingest"]["acknowledged_per_second"]),
            ("", "items", d["items"]),
            ("", "processed /s from worker start", d.get("items_per_second")),
            ("", "first processed after start s", d.get("first_processed_after_start_s")),
            ("", "processed /s after the first", d.get("items_per_second_after_first")),
        ]
    peaks = ", ".join(str(x) for x in r["receivers_peak_rss_mib"])
    rows.append(("memory", "receiver peak RSS MiB", peaks))
    for n, tree in enumerate(r["worker_processes"], 1):
        peaks = ", ".join(str(x["peak_rss_mib"]) for x in tree or [])
        rows.append(("", f"worker tree, run {n}: peak RSS MiB", peaks))
    e = r["exactly_once"]
    rows.append(
        (
            "exactly once",
            "acked / items / pix rows",
            f"{e['acknowledged']} / {e['inbox_items']} / {e['pix_received']}",
        )
    )
    rows.append(("", "passed", e["passed"]))
    for phase, measure_name, value in rows:
        table.add_row(phase, measure_name, str(value))
    console = Console(width=max(Console().width, 110))
    console.print(table)
    console.print(
        f"sustained ≥ {TARGET_RATE:.0f}/s (offered {t['sustained_rate']:.0f}/s): "
        f"{_verdict(t['sustained_met'])}; lag p99 {t['lag_p99_s']} s (≤ {TARGET_LAG_P99_S:.0f}): "
        f"{_verdict(t['lag_met'])}; drain {t['drain_per_second']}/s (≥ {TARGET_DRAIN_RATE:.0f}):"
        f" {_verdict(t['drain_met'])}; receiver {t['receiver_peak_rss_mib']} MiB "
        f"(≤ {TARGET_RECEIVER_MIB:.0f}): {_verdict(t['receiver_rss_met'])}; worker process "
        f"{t['worker_peak_rss_mib']} MiB (≤ {TARGET_WORKER_MIB:.0f}): "
        f"{_verdict(t['worker_rss_met'])}"
    )


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=20.0, help="length of phases 1 and 2")
    parser.add_argument("--rate", type=float, default=2000.0, help="sustained deliveries/s")
    parser.add_argument("--connections", type=int, default=64, help="closed-loop connections")
    parser.add_argument(
        "--open-connections", type=int, default=64, help="connections of the open loop"
    )
    parser.add_argument("--backlog", type=int, default=50_000, help="deliveries to drain")
    parser.add_argument(
        "--receivers",
        type=int,
        default=1,
        help="pixrecon serve processes, each on its own port, the load spread over them "
        "(production mode only)",
    )
    parser.add_argument("--processes", type=int, default=2, help="pixrecon worker --processes")
    parser.add_argument("--threads", type=int, default=8, help="pixrecon worker --threads")
    parser.add_argument(
        "--single-node", action="store_true", help="SQLite, no broker, in-process workers"
    )
    parser.add_argument(
        "--drain-timeout", type=float, default=600.0, help="seconds to wait for pending items"
    )
    parser.add_argument("--profile", type=Path, help="py-spy the sustained phase into DIR")
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--broker-url", default=DEFAULT_BROKER)
    parser.add_argument("--json", type=Path, default=Path("e2e-benchmark.json"))
    parser.add_argument("--keep", action="store_true", help="do not drop the database")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    return parser.parse_args(argv)


@contextmanager
def sqlite_database(keep: bool) -> Iterator[str]:
    """A fresh SQLite file in a directory of its own; removed afterwards."""
    directory = Path(tempfile.mkdtemp(prefix="pixrecon-e2e-"))
    try:
        yield f"sqlite:///{directory / 'pixrecon.db'}"
    finally:
        if keep:
            print(f"kept database {directory / 'pixrecon.db'}")
        else:
            shutil.rmtree(directory, ignore_errors=True)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.receivers < 1 or (args.single_node and args.receivers > 1):
        # Single node: SQLite has one writer, and each receiver would run its own workers.
        raise SystemExit("--receivers: at least 1, and exactly 1 with --single-node")
    result: dict[str, Any] = {
        "benchmark": "e2e",
        "command": " ".join(["python", "benchmarks/e2e.py", *argv]),
        "params": {
            "single_node": args.single_node,
            "seconds": args.seconds,
            "rate": args.rate,
            "connections": args.connections,
            "open_connections": args.open_connections,
            "backlog": None if args.single_node else args.backlog,
            "receivers": args.receivers,
            "processes": None if args.single_node else args.processes,
            "threads": Settings.model_fields["worker_threads"].default
            if args.single_node
            else args.threads,
        },
        "engine": engine_version(("receiver", "reconcile", "worker", "migrations", "pixrecon")),
        "nproc": len(os.sched_getaffinity(0)),
    }
    if args.single_node:
        with sqlite_database(args.keep) as url:
            result["database"] = url.rsplit("/", 1)[-1]
            result["results"] = measure(args, url)
    else:
        with production_stores(args) as url:
            result["database"] = make_url(url).database
            result["results"] = measure(args, url)
    result["targets"] = targets(args, result["results"])
    args.json.write_text(json.dumps(result, indent=2))
    print_result(result)
    if not result["results"]["exactly_once"]["passed"]:
        print("MISMATCH: acknowledged deliveries, inbox items and pix_received rows disagree")
        return 1
    return 1 if args.strict and not result["targets"]["all_met"] else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
