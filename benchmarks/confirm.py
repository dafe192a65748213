"""Confirming what webhooks brought (docs/design.md §1.5): N Pix notified by webhook, then
settled against the provider's API the way a day is fetched — a walk of ``GET /pix``
over the day, then a look-up of whatever is still pending.

    python benchmarks/confirm.py [--pix 20000] [--page-size 500] [--database-url URL]
                                 [--keep] [--json PATH]

The provider is the sandbox over real HTTP on loopback (``pixrecon sandbox``'s app, in a
thread of this process). The script books N Pix in it, stores and processes N webhooks of
the same Pix on a fresh PostgreSQL database (each ``pix_received`` row then pending), and
measures two ways of settling them, each on its own copy of those rows:

1. **look-ups only**: ``confirm_all`` with nothing listed first, one ``GET /pix/{e2eid}``
   per Pix (what a Pix notified by webhook needed before a listing settled it);
2. **the day's fetch**: ``poll_received_pix`` over the day (a listing settles every Pix it
   shows: ``confirm_listed``), then ``confirm_all`` for what is left.

Reported for each: wall time, calls of ``GET /pix/{e2eid}`` and of ``GET /pix``, rows
confirmed. Both must confirm every row; the script exits 1 otherwise. Times are not
asserted anywhere (``tests/benchmarks/test_confirm_benchmark_smoke.py`` runs it tiny).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console
from rich.table import Table
from sqlalchemy import Engine, func, select, update
from sqlalchemy.engine import make_url
from sqlmodel import col

from benchmarks.common import DEFAULT_URL, engine_version, psycopg_url, scratch_database
from migrations.apply import upgrade
from pixrecon.sandbox_wiring import sandbox_servers
from reconcile.confirmation import confirm_all
from reconcile.db import create_db_engine, session_scope
from reconcile.inbox import store_items
from reconcile.logs import configure_logging
from reconcile.metrics import PROVIDER_REQUESTS
from reconcile.models import PixReceived, Source
from reconcile.payloads.pix import pix_callback_items
from reconcile.polling.qrcode import poll_received_pix
from reconcile.processing import process_items
from reconcile.provider.factory import qrcode_api
from reconcile.settings import Settings
from sandbox.state import SandboxProvider


def _calls(endpoint: str) -> float:
    return sum(
        sample.value
        for family in PROVIDER_REQUESTS.collect()
        for sample in family.samples
        if sample.name.endswith("_total") and sample.labels.get("endpoint") == endpoint
    )


def _notify(engine: Engine, booked: list[dict[str, Any]]) -> None:
    for at in range(0, len(booked), 1000):
        with session_scope(engine) as session:
            items = [i for pix in booked[at : at + 1000] for i in pix_callback_items(pix)]
            new = store_items(session, items, source=Source.WEBHOOK).new_ids
        process_items(engine, new)


def _reset(engine: Engine) -> None:
    """Every row pending again, due now: the state the webhooks left."""
    with session_scope(engine) as session:
        session.execute(
            update(PixReceived).values(
                confirmation="pending",
                confirmed_amount_cents=None,
                confirmed_at=None,
                next_check_at=PixReceived.created_at,
                check_attempts=0,
            )
        )


def _confirmed(engine: Engine) -> int:
    with session_scope(engine) as session:
        return int(
            session.execute(
                select(func.count()).where(col(PixReceived.confirmation) == "confirmed")
            ).scalar_one()
        )


def _measure(name: str, engine: Engine, run: Any) -> dict[str, Any]:
    _reset(engine)
    looked_up, listed = _calls("/pix/{id}"), _calls("/pix")
    started = time.perf_counter()
    run()
    seconds = time.perf_counter() - started
    return {
        "how": name,
        "seconds": round(seconds, 3),
        "look_ups": int(_calls("/pix/{id}") - looked_up),
        "listing_pages": int(_calls("/pix") - listed),
        "confirmed": _confirmed(engine),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pix", type=int, default=20_000)
    parser.add_argument("--page-size", type=int, default=500)
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    configure_logging("WARNING")
    console = Console()
    provider = SandboxProvider(seed=7)
    booked = [provider.receive_pix(Decimal("10.00") + n % 1000) for n in range(args.pix)]
    with scratch_database(psycopg_url(args.database_url), args.keep) as url:
        database = make_url(url).database
        engine = create_db_engine(url)
        upgrade(engine)
        console.print(f"notifying {args.pix} Pix by webhook …")
        _notify(engine, booked)
        with sandbox_servers(provider) as urls:
            settings = urls.configure(Settings(_env_file=None, confirm_batch_size=500))
            api = qrcode_api(settings)
            assert api is not None
            now = datetime.now(UTC)
            start, end = now - timedelta(days=1), now + timedelta(hours=1)

            def look_ups() -> None:
                confirm_all(engine, api, None, settings)

            def fetched() -> None:
                poll_received_pix(api, engine, start, end, page_size=args.page_size)
                confirm_all(engine, api, None, settings)

            console.print("settling them one look-up each …")
            results = [_measure("look-ups only", engine, look_ups)]
            console.print("settling them by the day's fetch …")
            results.append(_measure("the day's fetch", engine, fetched))
            api.close()
        engine.dispose()
    table = Table(title=f"settling {args.pix} notified Pix against the sandbox")
    for column in ("how", "seconds", "look-ups", "listing pages", "confirmed", "Pix/s"):
        table.add_column(column, justify="left" if column == "how" else "right")
    for r in results:
        rate = r["confirmed"] / r["seconds"] if r["seconds"] else 0.0
        table.add_row(
            r["how"],
            f"{r['seconds']:.2f}",
            str(r["look_ups"]),
            str(r["listing_pages"]),
            str(r["confirmed"]),
            f"{rate:,.0f}",
        )
    console.print(table)
    ok = all(r["confirmed"] == args.pix for r in results)
    ratio = results[1]["seconds"] / results[0]["seconds"] if results[0]["seconds"] else 0.0
    console.print(
        f"the day's fetch takes {ratio:.3f} times the time of a look-up each; "
        f"every row confirmed both ways: {'yes' if ok else 'NO'}"
    )
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {
                    "pix": args.pix,
                    "database": database,
                    "results": results,
                    "version": engine_version(),
                }
            )
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
