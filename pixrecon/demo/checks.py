"""The demo's self-check: every figure pixrecon arrived at, against the sandbox's ground
truth of the day it played (``sandbox.scenario.ScenarioOutcome``).

Each check holds for any scenario file, not only the shipped day: the sandbox's books give
the money by statement category and the closing balance, its charges say how each was
paid, its cases how MED ended, its notifications what was sent, forged and acknowledged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.table import Table
from sqlalchemy import Engine, func, select
from sqlmodel import col

from reconcile.db import session_scope
from reconcile.formats import brl, count
from reconcile.models import InboxItem, ReconciliationItem
from reconcile.nightly import NightlyResult
from sandbox.scenario import ExpectedPayment, ScenarioOutcome

# Verdicts given to a notification the provider's API does not stand behind.
NOT_COUNTED = ("unconfirmed_webhook", "unknown_to_provider")


@dataclass(frozen=True)
class Check:
    """One figure judged: pixrecon's against the sandbox's, in centavos when ``money``;
    ``None`` when pixrecon could not tell (which never agrees)."""

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
class Section:
    title: str
    checks: tuple[Check, ...]


@dataclass(frozen=True)
class Checks:
    sections: tuple[Section, ...]

    @property
    def all(self) -> list[Check]:
        return [check for section in self.sections for check in section.checks]

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.all)


def _statement(bridge: dict[str, dict[str, Any]], *categories: str) -> int | None:
    figures = [bridge[category]["statement_cents"] for category in categories]
    return None if None in figures else sum(figures)


def money_checks(report: dict[str, Any], outcome: ScenarioOutcome) -> Section:
    """The bridge, line by line, against the sandbox's statement of the day."""
    bridge = {row["category"]: row for row in report["bridge"]["categories"]}
    booked = outcome.totals.by_category

    def truth(*categories: str) -> int:
        return sum(booked.get(category, 0) for category in categories)

    # Pix received as the API states them (gross, the day they were paid), whatever the
    # statement nets or carries to the next day.
    paid_in_day = sum(
        m.amount_cents
        for m in outcome.movements_of("pix_received")
        if m.booked and outcome.day_start <= m.at < outcome.day_end
    )
    # A fee netted from its Pix's credit line is in no line of its own: the bridge shows
    # the Pix gross and the fee apart, as the statement's own fee field says.
    netted_fees = outcome.totals.fees_cents - truth("PIX_RECEIVED_FEE")
    return Section(
        "Money: the nightly report against the sandbox's books",
        (
            Check(
                "opening balance",
                report["balance"]["opening_cents"],
                outcome.opening_balance_cents,
                True,
            ),
            Check(
                "Pix received, per the API", bridge["pix_received"]["api_cents"], paid_in_day, True
            ),
            Check(
                "Pix received, booked",
                _statement(bridge, "pix_received"),
                truth("PIX_RECEIVED") + netted_fees,
                True,
            ),
            Check(
                "refunds sent and MED debits",
                _statement(bridge, "refunds_sent", "med_debits"),
                truth("PIX_REFUND_SENT", "INFRACTION_DEBIT"),
                True,
            ),
            Check("payouts", _statement(bridge, "payouts"), truth("PIX_PAYMENT"), True),
            Check(
                "payout returns",
                _statement(bridge, "payout_returns"),
                truth("PIX_PAYMENT_REFUND"),
                True,
            ),
            Check("provider fees", _statement(bridge, "fees"), outcome.totals.fees_cents, True),
            Check(
                "closing balance",
                report["balance"]["closing_cents"],
                outcome.closing_balance_cents,
                True,
            ),
        ),
    )


def _verdicts(engine: Engine, run_id: int) -> dict[tuple[str, str], str]:
    with session_scope(engine) as session:
        rows = session.execute(
            select(
                col(ReconciliationItem.subject),
                col(ReconciliationItem.ref),
                col(ReconciliationItem.status),
            ).where(col(ReconciliationItem.run_id) == run_id)
        ).all()
    return {(subject, ref): status for subject, ref, status in rows}


def _judged_as_paid(verdict: str | None, payment: ExpectedPayment) -> bool:
    """pixrecon's verdict on a charge against how the sandbox says it was paid. A recurring
    charge still active at the day's end (``ATIVA``) is unpaid so far, and the payer's bank
    may yet retry it: pixrecon holds it ``pending`` until the retries run out."""
    if verdict == payment.outcome:
        return True
    still_retried = payment.kind == "cobr" and payment.provider_status == "ATIVA"
    return still_retried and payment.outcome == "unpaid" and verdict == "pending"


def record_checks(engine: Engine, result: NightlyResult, outcome: ScenarioOutcome) -> Section:
    """What pixrecon concluded about each charge, case and notification."""
    report = result.report
    verdicts = _verdicts(engine, result.run_id)
    charges_right = sum(
        _judged_as_paid(verdicts.get(("charge", f"{p.kind}:{p.txid}")), p) for p in outcome.payments
    )
    med = report["med"]
    cases = outcome.infractions
    not_counted = sum(status in NOT_COUNTED for status in verdicts.values())
    missed = sum(status == "missed_cycle" for status in verdicts.values())
    checks = [
        Check("charges judged as they were paid", charges_right, len(outcome.payments)),
        Check("MED cases still open", med["open_cases"], sum(c.status == "OPEN" for c in cases)),
        Check("MED money blocked", med["blocked_cents"], outcome.blocked_cents, True),
        Check("MED money debited", med["debited_cents"], sum(c.debited_cents for c in cases), True),
        Check("Pix Automático cycles missed", missed, len(outcome.missed_cycles)),
        Check("forged notifications, never money", not_counted, len(outcome.forged)),
    ]
    return Section("Records: what pixrecon concluded", tuple(checks))


def delivery_checks(engine: Engine, outcome: ScenarioOutcome) -> Section:
    """Every acknowledged notification stored once; what none announced, found by polling."""
    with session_scope(engine) as session:
        stored_copies = session.execute(
            select(func.coalesce(func.sum(InboxItem.webhook_count), 0))
        ).scalar_one()
        pix_polled = session.execute(
            select(func.count()).where(
                col(InboxItem.key).like("pix:%"), col(InboxItem.webhook_count) == 0
            )
        ).scalar_one()
        unfinished = session.execute(
            select(func.count()).where(col(InboxItem.status).in_(("pending", "failed")))
        ).scalar_one()
    # One notification item may carry several business items (a Pix and its refunds).
    acknowledged = sum(len(n.keys) * n.copies_acknowledged for n in outcome.notifications)
    return Section(
        "Deliveries",
        (
            Check("acknowledged items, each stored", int(stored_copies), acknowledged),
            Check("Pix no notification announced", pix_polled, len(outcome.pix_only_by_polling)),
            Check("items left pending or failed", unfinished, 0),
        ),
    )


def self_checks(engine: Engine, result: NightlyResult, outcome: ScenarioOutcome) -> Checks:
    return Checks(
        (
            money_checks(result.report, outcome),
            record_checks(engine, result, outcome),
            delivery_checks(engine, outcome),
        )
    )


def checks_table(section: Section) -> Table:
    table = Table(title=section.title, title_justify="left")
    table.add_column("", overflow="fold")
    # Figures never wrap (``R$`` apart from its amount reads as two values): the labels
    # give way first.
    table.add_column("pixrecon", justify="right", overflow="fold", no_wrap=True)
    table.add_column("sandbox says", justify="right", overflow="fold", no_wrap=True)
    table.add_column("", justify="center")
    for check in section.checks:
        mark = "✓" if check.ok else "[bold red]✗[/]"
        table.add_row(check.label, check.shown(check.got), check.shown(check.want), mark)
    return table
