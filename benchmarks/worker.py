"""A worker's cost per item: N Pix stored as webhooks bring them, then processed the way a
worker thread processes them (``process_items``, batches of the size the dispatcher sends),
on a fresh PostgreSQL database.

    python benchmarks/worker.py [--items 20000] [--batch 100] [--database-url URL]
                                [--keep] [--json PATH]

Reported: the process's CPU per item (``time.process_time``: this Python thread's work,
not PostgreSQL's), wall time per item, and items per second of one thread. Every item must
end as one ``pix_received`` row with its amount; the script exits 1 otherwise. Half the Pix
are written as the BCB documents them, half with a payer (read by the tolerant model), as
webhooks and polls bring them. Times are not asserted anywhere
(``tests/benchmarks/test_worker_benchmark_smoke.py`` runs it tiny).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console
from sqlalchemy import Engine, func, select, text
from sqlalchemy.engine import make_url
from sqlmodel import col

from benchmarks.common import DEFAULT_URL, engine_version, psycopg_url, scratch_database
from migrations.apply import upgrade
from reconcile.db import create_db_engine, session_scope
from reconcile.inbox import store_items
from reconcile.logs import configure_logging
from reconcile.models import PixReceived, Source
from reconcile.payloads.pix import pix_callback_items
from reconcile.processing import process_items

CENTS = 1_234


def _pix(n: int) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "endToEndId": f"E12345678202611281200{n:011d}",
        "txid": f"pedido{n:029d}",
        "valor": f"{CENTS // 100}.{CENTS % 100:02d}",
        "horario": "2026-11-28T12:00:00.000-03:00",
        "chave": "loja@exemplo.com.br",
        "infoPagador": "pedido",
    }
    if n % 2:
        raw["pagador"] = {"cpf": "12345678909", "nome": "Maria Souza"}
    return raw


def _store(engine: Engine, items: int) -> list[int]:
    for at in range(0, items, 1000):
        with session_scope(engine) as session:
            found = [
                item
                for n in range(at, min(at + 1000, items))
                for item in pix_callback_items({"pix": [_pix(n)]})
            ]
            store_items(session, found, source=Source.WEBHOOK)
    with engine.connect() as connection:
        return [row[0] for row in connection.execute(text("SELECT id FROM inbox_item ORDER BY id"))]


def _rows(engine: Engine) -> tuple[int, int]:
    with session_scope(engine) as session:
        count, total = session.execute(
            select(func.count(), func.coalesce(func.sum(col(PixReceived.amount_cents)), 0))
        ).one()
    return int(count), int(total)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    configure_logging("WARNING")
    console = Console()
    with scratch_database(psycopg_url(args.database_url), args.keep) as url:
        database = make_url(url).database
        engine = create_db_engine(url)
        upgrade(engine)
        console.print(f"storing {args.items} Pix as webhooks bring them …")
        ids = _store(engine, args.items)
        console.print(f"processing them in batches of {args.batch} …")
        cpu, wall = time.process_time(), time.perf_counter()
        for at in range(0, len(ids), args.batch):
            process_items(engine, ids[at : at + args.batch])
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        rows, total = _rows(engine)
        engine.dispose()
    ok = rows == args.items and total == rows * CENTS
    result = {
        "items": args.items,
        "batch": args.batch,
        "cpu_us_per_item": round(1e6 * cpu / args.items, 1),
        "wall_us_per_item": round(1e6 * wall / args.items, 1),
        "items_per_second": round(args.items / wall, 1) if wall else None,
        "rows": rows,
        "database": database,
        "version": engine_version(),
    }
    console.print(
        f"{result['cpu_us_per_item']} µs of CPU and {result['wall_us_per_item']} µs of wall "
        f"time per item ({result['items_per_second']} items/s on one thread); "
        f"every item one pix_received row with its amount: {'yes' if ok else 'NO'}"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(result))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
