"""The ingest benchmark (docs/design.md §7): webhook deliveries acknowledged after a durable commit
(PostgreSQL + Redis), against the ceiling of a no-op Starlette endpoint measured in the
same run.

    python benchmarks/ingest.py [--seconds 10] [--connections 32] [--rate 1000] [--single-node]

Starts two real servers, each a uvicorn process of its own with the same options:
``benchmarks/noop_app.py`` (reads the body, stores nothing) and ``pixrecon serve`` on a
fresh PostgreSQL database with ``PIXRECON_BROKER_URL`` set (so every accepted Pix is
committed to the inbox and sent to Redis) — or, with ``--single-node``, on a SQLite file
without a broker, its in-process workers processing what it stores. Then, from this
process:

1. closed loop against each server (``--connections`` keep-alive connections sending as
   fast as answers come back): the ratio of the two throughputs is the target's ratio;
2. open loop against the receiver at ``--rate`` requests per second: the ack latency
   percentiles, measured from when each request was due;
3. checks nothing was lost: every 2xx answered is one row in the inbox.

Every request carries one Pix with its own ``endToEndId`` in the BCB callback shape, and
the shared-secret header. Prints a table, writes the result as JSON and drops the
database (unless ``--keep``); ``--strict`` exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    # Run as a script: the repository root, not benchmarks/, must be importable.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from benchmarks.common import DEFAULT_URL, engine_version, psycopg_url, scratch_database
from benchmarks.loadgen import LoadResult, MakeRequest, closed, http_request, open_loop, run_load

ROOT = Path(__file__).resolve().parent.parent
PATH = "/webhooks/qrcode/pix"
TARGET_RATIO = 0.5
TARGET_P99_MS = 25.0
TARGET_RECEIVER_MIB = 150.0
DEFAULT_BROKER = os.environ.get("PIXRECON_BENCH_BROKER_URL", "redis://127.0.0.1:6379/13")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_listening(port: int, process: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listening on port {port} after {timeout} s")


@contextmanager
def server(command: list[str], port: int, env: dict[str, str]) -> Iterator[int]:
    """Run a server process; yields its pid."""
    process = subprocess.Popen(command, cwd=ROOT, env=env)
    try:
        _wait_listening(port, process)
        yield process.pid
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _vm_hwm_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def pix_request(secret_header: str, secret: str, run: str) -> MakeRequest:
    stamp = datetime.now(UTC).strftime("%Y%m%d%H%M")
    horario = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def make(n: int) -> bytes:
        pix = {
            "endToEndId": f"E12345678{stamp}{run}{n:07d}",
            "txid": f"bench{run}{n:020d}",
            "valor": f"{1 + n % 9999}.{n % 100:02d}",
            "horario": horario,
            "chave": "7d9f0335-8dcc-4054-9bf9-0dbd61d36906",
        }
        body = json.dumps({"pix": [pix]}).encode()
        return http_request(PATH, body, {secret_header: secret})

    return make


def _run_closed(
    port: int, make: MakeRequest, args: argparse.Namespace, counter: itertools.count[int]
) -> tuple[LoadResult, LoadResult]:
    """(warm-up, measured): a short warm-up first, so connections are open and code paths
    and caches warm when the measure starts."""
    options = {"connections": args.connections, "counter": counter}
    warm = run_load(closed("127.0.0.1", port, make, seconds=1.0, **options))
    return warm, run_load(closed("127.0.0.1", port, make, seconds=args.seconds, **options))


def migrate(database_url: str) -> None:
    from migrations.apply import upgrade
    from reconcile.db import create_db_engine

    engine = create_db_engine(database_url)
    upgrade(engine)
    engine.dispose()


def receiver_process(
    port: int, database_url: str, broker_url: str | None, header: str, secret: str
) -> tuple[list[str], dict[str, str]]:
    """The command and environment of the ``pixrecon serve`` under test: quiet, no periodic
    jobs; without ``broker_url``, single-node (its workers in-process)."""
    env = {
        **os.environ,
        "PIXRECON_DATABASE_URL": database_url,
        "PIXRECON_WEBHOOK_SECRET_HEADER": header,
        "PIXRECON_WEBHOOK_SECRETS": secret,
        # Quiet unless asked (PIXRECON_LOG_LEVEL=INFO measures the default's log lines).
        "PIXRECON_LOG_LEVEL": os.environ.get("PIXRECON_LOG_LEVEL", "WARNING"),
        "PIXRECON_SCHEDULER_ENABLED": "false",
    }
    if broker_url is not None:
        env["PIXRECON_BROKER_URL"] = broker_url
    else:
        env.pop("PIXRECON_BROKER_URL", None)
    command = [sys.executable, "-m", "pixrecon", "serve", "--host", "127.0.0.1"]
    return [*command, "--port", str(port)], env


def measure(args: argparse.Namespace, database_url: str) -> dict[str, Any]:
    migrate(database_url)
    secret = secrets.token_urlsafe(16)
    header = "X-Webhook-Secret"
    run = secrets.token_hex(2)  # 4 characters: endToEndIds stay 32 long
    make = pix_request(header, secret, run)
    counter = itertools.count()
    results: dict[str, Any] = {}

    noop_port = _free_port()
    uvicorn_options = ["--log-level", "warning", "--no-access-log", "--no-proxy-headers"]
    noop_cmd = [sys.executable, "-m", "uvicorn", "benchmarks.noop_app:app", "--host"]
    noop_cmd += ["127.0.0.1", "--port", str(noop_port), *uvicorn_options]
    with server(noop_cmd, noop_port, dict(os.environ)):
        print(f"no-op endpoint: {args.seconds:.0f} s, {args.connections} connections …")
        results["noop"] = _run_closed(noop_port, make, args, counter)[1].summary()

    receiver_port = _free_port()
    # Single-node: no broker, the receiver's own in-process workers process what it stores.
    broker = None if args.single_node else args.broker_url
    receiver_cmd, env = receiver_process(receiver_port, database_url, broker, header, secret)
    with server(receiver_cmd, receiver_port, env) as pid:
        print(f"receiver: {args.seconds:.0f} s, {args.connections} connections …")
        warm, receiver = _run_closed(receiver_port, make, args, counter)
        results["receiver"] = receiver.summary()
        print(f"receiver: open loop at {args.rate:.0f} req/s for {args.seconds:.0f} s …")
        paced = run_load(
            open_loop(
                "127.0.0.1",
                receiver_port,
                make,
                rate=args.rate,
                seconds=args.seconds,
                connections=args.open_connections,
                counter=counter,
            )
        )
        results["receiver_paced"] = paced.summary()
        results["receiver_peak_rss_mib"] = _vm_hwm_mib(pid)
        health = httpx.get(f"http://127.0.0.1:{receiver_port}/healthz", timeout=10)
        results["receiver_healthz"] = health.status_code

    check = create_engine(database_url)
    with check.connect() as conn:
        stored = conn.execute(text("SELECT count(*) FROM inbox_item")).scalar_one()
        deliveries = conn.execute(text("SELECT count(*) FROM webhook_delivery")).scalar_one()
    check.dispose()
    # Each request carries a Pix of its own: every 2xx must be exactly one inbox row.
    results["acknowledged"] = warm.ok + receiver.ok + paced.ok
    results["inbox_items"] = stored
    results["deliveries"] = deliveries
    return results


def _flush_redis(url: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    try:
        client.flushdb()
    finally:
        client.close()


@contextmanager
def production_stores(args: argparse.Namespace) -> Iterator[str]:
    """A scratch PostgreSQL database (its URL) and an empty Redis for one run; Redis is
    emptied again afterwards, whatever happened."""
    _flush_redis(args.broker_url)
    try:
        with scratch_database(psycopg_url(args.database_url), args.keep) as url:
            yield url
    finally:
        _flush_redis(args.broker_url)


def targets(results: dict[str, Any]) -> dict[str, Any]:
    noop = results["noop"]["requests_per_second"]
    receiver = results["receiver"]["requests_per_second"]
    ratio = round(receiver / noop, 3) if noop else None
    p99 = results["receiver_paced"]["p99_ms"]
    rss = results["receiver_peak_rss_mib"]
    return {
        "ratio": ratio,
        "ratio_met": ratio is not None and ratio >= TARGET_RATIO,
        "p99_ack_ms": p99,
        "p99_met": p99 is not None and p99 <= TARGET_P99_MS,
        "receiver_peak_rss_mib": rss,
        "rss_met": rss is not None and rss <= TARGET_RECEIVER_MIB,
    }


def print_result(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="ingest: one Pix per request, ack after commit")
    for column in ("server", "mode", "req/s", "p50 ms", "p99 ms", "max ms", "statuses"):
        table.add_column(column, justify="left" if column in ("server", "mode") else "right")
    rows = (
        ("no-op Starlette", "closed", result["results"]["noop"]),
        ("pixrecon serve", "closed", result["results"]["receiver"]),
        (
            "pixrecon serve",
            f"open {result['params']['rate']:.0f}/s",
            result["results"]["receiver_paced"],
        ),
    )
    for name, mode, r in rows:
        table.add_row(
            name,
            mode,
            f"{r['requests_per_second']:.0f}",
            str(r["p50_ms"]),
            str(r["p99_ms"]),
            str(r["max_ms"]),
            ", ".join(f"{k}: {v}" for k, v in r["statuses"].items())
            + (f", errors: {r['errors']}" if r["errors"] else ""),
        )
    console = Console()
    console.print(table)
    t = result["targets"]
    console.print(
        f"ratio {t['ratio']} (target ≥ {TARGET_RATIO}: {'met' if t['ratio_met'] else 'MISSED'}); "
        f"p99 ack at {result['params']['rate']:.0f}/s {t['p99_ack_ms']} ms (target ≤ "
        f"{TARGET_P99_MS:.0f}: {'met' if t['p99_met'] else 'MISSED'}); receiver peak RSS "
        f"{t['receiver_peak_rss_mib']} MiB (target ≤ {TARGET_RECEIVER_MIB:.0f}: "
        f"{'met' if t['rss_met'] else 'MISSED'})"
    )
    r = result["results"]
    console.print(f"{r['acknowledged']} deliveries acknowledged, {r['inbox_items']} inbox rows")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each phase")
    parser.add_argument("--connections", type=int, default=32, help="closed-loop connections")
    parser.add_argument("--rate", type=float, default=1000.0, help="open-loop requests/s")
    parser.add_argument(
        "--open-connections", type=int, default=64, help="connections of the open loop"
    )
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--broker-url", default=DEFAULT_BROKER)
    parser.add_argument("--json", type=Path, default=Path("ingest-benchmark.json"))
    parser.add_argument("--keep", action="store_true", help="do not drop the database")
    parser.add_argument(
        "--single-node",
        action="store_true",
        help="pixrecon serve on a SQLite file without a broker (in-process workers)",
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    result: dict[str, Any] = {
        "benchmark": "ingest",
        "command": " ".join(["python", "benchmarks/ingest.py", *argv]),
        "params": {
            "seconds": args.seconds,
            "connections": args.connections,
            "rate": args.rate,
            "open_connections": args.open_connections,
        },
        "engine": engine_version(("receiver", "reconcile", "worker", "migrations")),
        "nproc": len(os.sched_getaffinity(0)),
    }
    if args.single_node:
        result["params"]["single_node"] = True
        with tempfile.TemporaryDirectory(prefix="pixrecon-ingest-") as directory:
            url = f"sqlite:///{Path(directory) / 'ingest.db'}"
            result["database"] = "sqlite"
            result["results"] = measure(args, url)
    else:
        with production_stores(args) as url:
            result["database"] = make_url(url).database
            result["results"] = measure(args, url)
    result["targets"] = targets(result["results"])
    args.json.write_text(json.dumps(result, indent=2))
    print_result(result)
    if result["results"]["inbox_items"] != result["results"]["acknowledged"]:
        print("MISMATCH: inbox rows differ from acknowledged deliveries")
        return 1
    t = result["targets"]
    missed = not (t["ratio_met"] and t["p99_met"] and t["rss_met"])
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
