"""The overload benchmark: a receiver offered more than it can commit.

    python benchmarks/overload.py [--seconds 30] [--connections 3000]

Starts ``pixrecon serve`` on a fresh PostgreSQL database with ``PIXRECON_BROKER_URL`` set
(as ``benchmarks/ingest.py`` does), then:

1. capacity: a closed loop of 32 connections for 10 s (``benchmarks/loadgen.py``) — what
   the receiver acknowledges when it is kept just busy;
2. overload: ``wrk`` (Debian's package) with ``--connections`` connections for
   ``--seconds``, each sending the next delivery as soon as the last is answered — the
   provider opening as many connections as its queue needs, each Pix its own
   ``endToEndId``. Every answer must be a 2xx or a 503; reported are the answers per
   second and their ratio to the capacity, the counts of each status, wrk's latency
   percentiles and timeouts, and the receiver's peak RSS (target ≤ 150 MB);
3. recovery: the closed loop again for 5 s, right after: throughput back to at least 80 %
   of the capacity, every answer 2xx;
4. nothing lost: every delivery answered 2xx is an inbox item. wrk stops with requests in
   flight and gives up on those past ``--timeout``, whose fate it never learns, so the
   inbox may hold up to that many more.

Prints a summary and writes the result as JSON; ``--strict`` exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from benchmarks.common import DEFAULT_URL, engine_version
from benchmarks.ingest import (
    DEFAULT_BROKER,
    TARGET_RECEIVER_MIB,
    _free_port,
    _vm_hwm_mib,
    migrate,
    pix_request,
    production_stores,
    receiver_process,
    server,
)
from benchmarks.loadgen import LoadResult, closed, run_load

CAPACITY_CONNECTIONS = 32
WRK_TIMEOUT_SECONDS = 10
# Each wrk thread numbers its own deliveries, under a prefix of its own: every Pix is new.
WRK_SCRIPT = """
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("prefix", string.format("%s%02d", run, threads))
end
function init(args)
  n = 0
end
function request()
  n = n + 1
  local id = string.format("E12345678%s%s%07d", stamp, prefix, n)
  local body = '{"pix":[{"endToEndId":"' .. id .. '","valor":"10.00","horario":"'
    .. horario .. '","chave":"7d9f0335-8dcc-4054-9bf9-0dbd61d36906"}]}'
  return wrk.format("POST", "/webhooks/qrcode/pix",
    {["Content-Type"] = "application/json", [header] = secret}, body)
end
"""


def run_wrk(port: int, args: argparse.Namespace, header: str, secret: str) -> dict[str, Any]:
    from datetime import UTC, datetime

    wrk = shutil.which("wrk")
    if wrk is None:
        raise SystemExit("wrk is not installed (Debian: apt-get install wrk)")
    now = datetime.now(UTC)
    variables = (
        f'run = "{secrets.token_hex(1)}"\nstamp = "{now:%Y%m%d%H%M}"\n'
        f'horario = "{now.isoformat(timespec="milliseconds").replace("+00:00", "Z")}"\n'
        f'header = "{header}"\nsecret = "{secret}"\n'
    )
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(variables + WRK_SCRIPT)
    command = [wrk, "-t2", f"-c{args.connections}", f"-d{args.seconds:g}s"]
    command += [f"--timeout={WRK_TIMEOUT_SECONDS}s", "--latency", "-s", script.name]
    command.append(f"http://127.0.0.1:{port}")
    try:
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(script.name)
    return parse_wrk(output)


def _ms(text: str) -> float:
    value, unit = float(re.sub(r"[a-z]+$", "", text)), re.sub(r"^[0-9.]+", "", text)
    return round(value * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit], 2)


def parse_wrk(output: str) -> dict[str, Any]:
    found: dict[str, Any] = {"raw": output}
    requests = re.search(r"(\d+) requests in ([0-9.]+)s", output)
    assert requests is not None, output
    found["requests"] = int(requests.group(1))
    found["seconds"] = float(requests.group(2))
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    found["non_2xx"] = int(non_2xx.group(1)) if non_2xx else 0
    found["answered_2xx"] = found["requests"] - found["non_2xx"]
    errors = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output
    )
    found["socket_errors"] = (
        {
            k: int(v)
            for k, v in zip(("connect", "read", "write", "timeout"), errors.groups(), strict=True)
        }
        if errors
        else {}
    )
    for q in ("50", "99"):
        match = re.search(rf"^\s+{q}%\s+(\S+)", output, re.MULTILINE)
        found[f"p{q}_ms"] = _ms(match.group(1)) if match else None
    return found


def measure(args: argparse.Namespace, database_url: str) -> dict[str, Any]:
    migrate(database_url)
    secret = secrets.token_urlsafe(16)
    header = "X-Webhook-Secret"
    make = pix_request(header, secret, secrets.token_hex(2))
    counter = itertools.count()
    port = _free_port()
    command, env = receiver_process(port, database_url, args.broker_url, header, secret)
    results: dict[str, Any] = {}
    with server(command, port, env) as pid:

        def loop(seconds: float) -> LoadResult:
            return run_load(
                closed(
                    "127.0.0.1",
                    port,
                    make,
                    connections=CAPACITY_CONNECTIONS,
                    seconds=seconds,
                    counter=counter,
                )
            )

        warm = loop(1.0)
        print("capacity: closed loop, 32 connections, 10 s …")
        capacity = loop(10.0)
        results["capacity"] = capacity.summary()
        print(f"overload: wrk, {args.connections} connections, {args.seconds:g} s …")
        overload = run_wrk(port, args, header, secret)
        overload["answers_per_second"] = round(overload["requests"] / overload["seconds"], 1)
        overload["ratio_to_capacity"] = round(
            overload["answers_per_second"] / capacity.throughput, 2
        )
        results["overload"] = {k: v for k, v in overload.items() if k != "raw"}
        results["overload_wrk_output"] = overload["raw"]
        results["overload_peak_rss_mib"] = _vm_hwm_mib(pid)
        print("recovery: closed loop, 32 connections, 5 s …")
        recovery = loop(5.0)
        results["recovery"] = recovery.summary()
        results["receiver_peak_rss_mib"] = _vm_hwm_mib(pid)
        results["receiver_alive"] = httpx.get(f"http://127.0.0.1:{port}/readyz").status_code == 200
    check = create_engine(database_url)
    with check.connect() as conn:
        results["inbox_items"] = conn.execute(text("SELECT count(*) FROM inbox_item")).scalar_one()
    check.dispose()
    runs = (warm, capacity, recovery)
    results["acknowledged"] = sum(r.ok for r in runs) + overload["answered_2xx"]
    # wrk's requests still in flight when it stops, or past its timeout: fate unknown.
    results["unknown_fate"] = (
        sum(r.errors for r in runs) + args.connections + overload["socket_errors"].get("timeout", 0)
    )
    return results


def verdict(results: dict[str, Any]) -> dict[str, Any]:
    rss = results["receiver_peak_rss_mib"]
    recovered = results["recovery"]["requests_per_second"] >= 0.8 * (
        results["capacity"]["requests_per_second"]
    ) and set(results["recovery"]["statuses"]) == {"200"}
    return {
        "rss_met": rss is not None and rss <= TARGET_RECEIVER_MIB,
        "recovered": recovered,
        "alive": results["receiver_alive"],
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=30.0, help="length of the overload")
    parser.add_argument("--connections", type=int, default=3000, help="wrk's connections")
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--broker-url", default=DEFAULT_BROKER)
    parser.add_argument("--json", type=Path, default=Path("overload-benchmark.json"))
    parser.add_argument("--keep", action="store_true", help="do not drop the database")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a check fails")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {
        "benchmark": "overload",
        "command": " ".join(["python", "benchmarks/overload.py", *argv]),
        "params": {"seconds": args.seconds, "connections": args.connections},
        "engine": engine_version(("receiver", "reconcile", "worker", "migrations")),
        "nproc": len(os.sched_getaffinity(0)),
    }
    with production_stores(args) as url:
        result["database"] = make_url(url).database
        result["results"] = measure(args, url)
    r = result["results"]
    result["checks"] = verdict(r)
    stored, acked, unknown = r["inbox_items"], r["acknowledged"], r["unknown_fate"]
    # Every 2xx is a row, a 503 none; a request whose answer never came, either.
    result["checks"]["inbox_matches"] = acked <= stored <= acked + unknown
    args.json.write_text(json.dumps(result, indent=2))
    print(json.dumps({k: r[k] for k in ("capacity", "overload", "recovery")}, indent=1))
    print(
        f"receiver peak RSS {r['receiver_peak_rss_mib']} MiB; inbox {stored} rows, "
        f"{acked} acknowledged, at most {unknown} of unknown fate; "
        f"checks: {result['checks']}"
    )
    return 1 if args.strict and not all(result["checks"].values()) else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
