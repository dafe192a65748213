"""``pixrecon demo``: the whole path once, on the embedded defaults, against the sandbox.

The sandbox receives a few hundred Pix and notifies the receiver with faults (some
notifications repeated, some never sent, Pix without txid not notified at all, as in the
BCB rules); polling ``GET /pix`` then finds what no webhook brought. The summary checks
that every Pix landed exactly once and that the money adds up.
"""

from __future__ import annotations

import random
import secrets
import time
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from sqlalchemy import Engine
from sqlalchemy.engine import make_url

from pixrecon.bootstrap import open_database, setup_logging
from pixrecon.node import Node
from pixrecon.report import print_report
from pixrecon.sandbox_wiring import sandbox_servers
from reconcile.db import session_scope
from reconcile.formats import brl, count
from reconcile.nightly import reconcile_day
from reconcile.polling.day import Family, fetch_window
from reconcile.queries import inbox_summary
from reconcile.settings import Settings
from reconcile.timeutil import BUSINESS_TZ, utcnow
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider
from sandbox.webhooks import BodyShape, DeliveryReport, PixFault, WebhookDeliverer, random_plan

# (shape, Pix per request): every body shape real providers use, in turn.
SHAPES = [
    (BodyShape.STANDARD, 5),
    (BodyShape.SINGLE_OBJECT, 1),
    (BodyShape.FLAT, 1),
    (BodyShape.ARRAY, 3),
]
CHUNK = 20


@dataclass
class Expected:
    pix: int
    cents: int
    duplicates: int
    only_by_polling: int


def _reset_sqlite(database_url: str) -> None:
    url = make_url(database_url)
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return
    for suffix in ("", "-wal", "-shm"):
        Path(url.database + suffix).unlink(missing_ok=True)


def _digits(rng: random.Random, count: int) -> str:
    return "".join(str(rng.randrange(10)) for _ in range(count))


def _receive(provider: SandboxProvider, rng: random.Random, count: int) -> list[dict[str, object]]:
    received = []
    for n in range(count):
        amount = Decimal(rng.randrange(100, 200_000)) / 100
        # About one Pix in ten has no txid: the BCB notifies none of those.
        txid = None if rng.random() < 0.1 else f"demo{n:06d}{secrets.token_hex(8)}"
        if rng.random() < 0.8:
            received.append(provider.receive_pix(amount, txid=txid, payer_cpf=_digits(rng, 11)))
        else:
            received.append(provider.receive_pix(amount, txid=txid, payer_cnpj=_digits(rng, 14)))
    return received


def _deliver(
    receiver_url: str,
    secret_header: str,
    secret: str,
    pix: list[dict[str, object]],
    plan: dict[str, PixFault],
    rng: random.Random,
    progress: Progress,
) -> DeliveryReport:
    total = DeliveryReport()
    task = progress.add_task("webhooks delivered", total=len(pix))
    for index, start in enumerate(range(0, len(pix), CHUNK)):
        shape, batch_size = SHAPES[index % len(SHAPES)]
        chunk = pix[start : start + CHUNK]
        with WebhookDeliverer(
            receiver_url + "/webhooks/qrcode",
            secret_header=secret_header,
            secret=secret,
            batch_size=batch_size,
            shape=shape,
            shuffle=True,
            rng=rng,
        ) as deliverer:
            report = deliverer.deliver(chunk, plan)
        total.requests_sent += report.requests_sent
        total.pix_delivered += report.pix_delivered
        total.copies_delivered += report.copies_delivered
        total.dropped += report.dropped
        total.skipped_without_txid += report.skipped_without_txid
        total.non_2xx_responses += report.non_2xx_responses
        total.undelivered.extend(report.undelivered)
        progress.advance(task, len(chunk))
    return total


FORGED = 2


def _forge(rng: random.Random, count: int) -> list[dict[str, object]]:
    """Notifications the provider never sent (a leaked secret, say): well-formed, with
    endToEndIds the API has never heard of."""
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return [
        {
            "endToEndId": "E99999008" + "".join(rng.choice(alphabet) for _ in range(23)),
            "txid": f"forged{n}",
            "valor": "4999.00",
            "horario": utcnow().isoformat(),
        }
        for n in range(count)
    ]


def _wait_processed(engine: Engine, progress: Progress, task: TaskID) -> dict[str, int]:
    deadline = time.monotonic() + 30
    while True:
        with session_scope(engine) as session:
            summary = inbox_summary(session)
        progress.update(
            task, completed=summary["processed"] + summary["failed"], total=summary["items"]
        )
        if summary["pending"] == 0 or time.monotonic() > deadline:
            return summary
        time.sleep(0.1)


@dataclass(frozen=True)
class Check:
    """One figure the demo judges: pixrecon's against the sandbox's, in centavos when
    ``money``; ``None`` when pixrecon could not tell."""

    label: str
    got: int | None
    want: int
    money: bool = False

    @property
    def ok(self) -> bool:
        return self.got == self.want

    def shown(self, value: int | None) -> str:
        return brl(value) if self.money else count(value)


@dataclass(frozen=True)
class Checks:
    """The records and the money, and apart from them the deliveries."""

    records: list[Check]
    deliveries: list[Check]

    @property
    def ok(self) -> bool:
        return all(check.ok for check in [*self.records, *self.deliveries])


def _checks(summary: dict[str, int], nightly: dict[str, Any], expected: Expected) -> Checks:
    """Every figure the demo judges."""
    return Checks(
        records=[
            Check("Pix received, confirmed by the API", summary["pix_confirmed"], expected.pix),
            Check("amount confirmed", summary["pix_confirmed_cents"], expected.cents, money=True),
            Check("forged webhooks flagged", summary["pix_unconfirmed_webhook"], FORGED),
            Check("inbox items still pending", summary["pending"], 0),
            Check("inbox items failed", summary["failed"], 0),
            # The nightly run agrees: credits booked equal credits confirmed, no drift, and
            # the only exceptions are the forged notifications.
            Check(
                "nightly: statement credits",
                nightly["totals"]["credits"]["statement"],
                expected.cents,
                money=True,
            ),
            Check("nightly: balance drift", nightly["balance_drift_cents"], 0, money=True),
            Check(
                "nightly: unconfirmed webhooks",
                nightly["counts"].get("unconfirmed_webhook"),
                FORGED,
            ),
            Check("nightly: exceptions", nightly["open_exceptions"], FORGED),
        ],
        deliveries=[
            Check("duplicate webhooks counted", summary["duplicates"], expected.duplicates),
            Check("found only by polling", summary["only_by_polling"], expected.only_by_polling),
        ],
    )


def _table(title: str) -> Table:
    table = Table(title=title)
    table.add_column("", overflow="fold")
    table.add_column("pixrecon", justify="right", overflow="fold")
    table.add_column("sandbox says", justify="right", overflow="fold")
    table.add_column("", justify="center")
    return table


def _add_checks(table: Table, checks: list[Check]) -> None:
    for check in checks:
        mark = "✓" if check.ok else "✗"
        table.add_row(check.label, check.shown(check.got), check.shown(check.want), mark)


def _summary_table(checks: Checks, elapsed: float) -> Table:
    table = _table(f"pixrecon demo — {elapsed:.1f} s")
    _add_checks(table, checks.records)
    return table


def _deliveries_table(checks: Checks, report: DeliveryReport, polled: int) -> Table:
    """The delivery checks, and beside them, left unmarked, figures that are no check: what
    the sandbox sent and left out, what polling saw."""
    table = _table("Deliveries")
    shapes = f"webhook requests, {len(SHAPES)} body shapes"
    table.add_row(shapes, "", count(report.requests_sent), "")
    _add_checks(table, checks.deliveries)
    table.add_row("  notifications dropped", "", count(report.dropped), "")
    table.add_row("  Pix without txid, never notified", "", count(report.skipped_without_txid), "")
    table.add_row("  notifications never acknowledged", "", count(len(report.undelivered)), "")
    table.add_row("Pix seen by polling", count(polled), "", "")
    return table


def run_demo(*, pix_count: int, seed: int, database_url: str, console: Console) -> int:
    started = time.monotonic()
    secret = secrets.token_urlsafe(24)
    _reset_sqlite(database_url)
    rng = random.Random(seed)
    provider = SandboxProvider(seed=seed)
    columns = (
        TextColumn("{task.description:<24}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with sandbox_servers(provider) as urls:
        settings = urls.configure(
            Settings(
                _env_file=None,
                database_url=database_url,
                webhook_secrets=[secret],
                log_level="WARNING",
                # The demo runs each step itself, in order, instead of on timers; and its
                # sandbox never lags, so a Pix it does not know after a moment is forged.
                scheduler_enabled=False,
                confirm_grace_seconds=0.001,
                sweep_interval_seconds=1.0,
                redispatch_after_seconds=5.0,
            )
        )
        setup_logging(settings)
        engine = open_database(settings, auto_upgrade=True)
        with (
            Node(settings, engine) as node,
            BackgroundServer(node.app) as receiver,
            Progress(*columns, console=console) as progress,
        ):
            window_start = utcnow() - timedelta(minutes=1)
            task = progress.add_task("sandbox receives Pix", total=pix_count)
            pix = _receive(provider, rng, pix_count)
            progress.update(task, completed=pix_count)

            plan = random_plan(pix, rng, drop_rate=0.08, duplicate_rate=0.15, max_copies=4)
            header = settings.webhook_secret_header
            report = _deliver(receiver.url, header, secret, pix, plan, rng, progress)
            with httpx.Client(headers={header: secret}) as forger:
                forger.post(
                    receiver.url + "/webhooks/qrcode/pix", json={"pix": _forge(rng, FORGED)}
                )

            poll_task = progress.add_task("polling the QR code API", total=pix_count)
            fetched = fetch_window(
                engine,
                node.runtime.jobs.providers,
                window_start,
                utcnow() + timedelta(minutes=1),
                families=(Family.QRCODE,),
                on_new=node.runtime.dispatcher.from_polls,
            )
            polled = fetched.steps["received_pix"]
            progress.update(poll_task, completed=polled.seen)
            _wait_processed(engine, progress, progress.add_task("workers processing"))

            confirm_task = progress.add_task("confirming by API", total=None)
            node.runtime.jobs.confirm()
            with session_scope(engine) as session:
                summary = inbox_summary(session)
            progress.update(
                confirm_task, total=summary["pix_received"], completed=summary["pix_received"]
            )
            statement_task = progress.add_task("polling the statement", total=None)
            node.runtime.jobs.poll_accounts()
            _wait_processed(engine, progress, statement_task)
            nightly = reconcile_day(engine, utcnow().astimezone(BUSINESS_TZ).date())

    expected = Expected(
        pix=len(pix),
        cents=sum(int(Decimal(str(p["valor"])) * 100) for p in pix),
        duplicates=report.duplicates_sent,
        only_by_polling=report.dropped + report.skipped_without_txid + len(report.undelivered),
    )
    console.rule("the nightly reconciliation of today")
    print_report(nightly, console)
    console.print(
        f"(The {FORGED} exceptions are the forged notifications, as planned; in production "
        "`pixrecon reconcile` exits 1 on such a day.)"
    )
    console.rule("the demo's own check")
    checks = _checks(summary, nightly.summary, expected)
    console.print(_summary_table(checks, time.monotonic() - started))
    console.print(_deliveries_table(checks, report, polled.seen))
    console.print(f"The {FORGED} forged notifications were stored but their money never counted.")
    console.print(
        f"Database: {make_url(database_url).render_as_string(hide_password=True)} — try "
        "`pixrecon events` with PIXRECON_DATABASE_URL set to it."
    )
    ok = checks.ok
    if not ok:
        console.print("[bold red]the demo found a discrepancy (see ✗ above)[/]")
    return 0 if ok else 1
