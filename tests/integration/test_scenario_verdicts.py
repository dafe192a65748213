"""Scenario days played end to end and judged: the sandbox plays the day against a
running receiver, the workers' jobs poll and confirm, and the nightly run's verdicts, its
bridge and the day's verdict must agree with the scenario's ground truth — on SQLite and
PostgreSQL. Every day is then judged again a month later: the report must not change."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy import Engine

from reconcile.actions import REPEAT_REF, is_refund_ref
from reconcile.formats import brl
from reconcile.models import ReconciliationItem
from reconcile.nightly import NightlyResult
from sandbox.scenario import ScenarioOutcome
from tests.integration.scenario_day import PlayedDay, played
from tests.reconcile.day_book import verdicts_of

Verdicts = dict[tuple[str, str], ReconciliationItem]


def _succeeds(job: Callable[[], bool]) -> None:
    """A job the scenario's API faults may fail, as the scheduler would run it: again."""
    assert any(job() for _ in range(10)), job


def _judged(day: PlayedDay) -> NightlyResult:
    day.node.wait_processed(timeout=20)
    jobs = day.node.node.runtime.jobs
    _succeeds(jobs.poll_qrcode)
    _succeeds(jobs.poll_accounts)
    day.node.wait_processed(timeout=20)
    _succeeds(jobs.confirm)
    return day.reconcile()


def _comparable(report: dict[str, Any]) -> dict[str, Any]:
    """The report less what names the run itself."""
    return {key: value for key, value in report.items() if key != "run_id"}


def _judged_again_later(day: PlayedDay, first: NightlyResult) -> None:
    """Re-running the day, now and with the clock a month on, says the same thing."""
    for later in (timedelta(0), timedelta(days=31)):
        again = day.reconcile(now=day.node_now() + later)
        assert again.run_id != first.run_id
        assert _comparable(again.report) == _comparable(first.report), later


def _bridge_explains_the_day(result: NightlyResult) -> dict[str, dict[str, Any]]:
    bridge = result.report["bridge"]
    assert bridge["residual_cents"] == 0, bridge
    assert bridge["unexplained_cents"] == 0
    booked = sum(row["sign"] * row["statement_cents"] for row in bridge["categories"])
    assert bridge["opening_cents"] + booked == bridge["closing_cents"]
    return {row["category"]: row for row in bridge["categories"]}


def _actual_is_what_the_statement_moved(
    verdicts: Verdicts, rows: dict[str, dict[str, Any]]
) -> None:
    """A sum of ``actual`` is money that moved: over the day's movements in (Pix received,
    payout returns and credits notified), out (refunds) and its payouts, what the
    statement booked in each, less what it booked for an earlier day and plus what it
    booked the next day (carried)."""

    def booked(*categories: str) -> int:
        return sum(
            rows[c]["statement_cents"] - rows[c]["carried_in_cents"] + rows[c]["carried_out_cents"]
            for c in categories
        )

    def moved(subject: str, out: bool) -> int:
        return sum(
            row.actual_cents or 0
            for (s, ref), row in verdicts.items()
            if s == subject and not ref.startswith(REPEAT_REF) and is_refund_ref(ref) == out
        )

    assert moved("movement", out=False) == booked("pix_received", "payout_returns")
    assert moved("movement", out=True) == booked("refunds_sent")
    assert moved("payout", out=False) == booked("payouts")


EXIT_CODES = {"reconciled": 0, "breaks": 1}


def _day_ends(day: PlayedDay, result: NightlyResult, verdict: str) -> None:
    """The day's verdict and exit code; its bridge explains it; a re-run says the same."""
    _bridge_explains_the_day(result)
    assert result.verdict.value == verdict, result.report["exceptions"]
    assert result.exit_code == EXIT_CODES[verdict]
    _judged_again_later(day, result)


def _movement(outcome: ScenarioOutcome, ref: str) -> Any:
    return next(m for m in outcome.movements if m.ref == ref)


def _status(verdicts: Verdicts, subject: str, ref: str) -> tuple[str, bool]:
    row = verdicts[(subject, ref)]
    return row.status, row.exception


def test_a_day_with_provider_fees_is_reconciled_fees_and_all(engine: Engine) -> None:
    with played(engine, "fees.json") as day:
        result = _judged(day)
        rows = _bridge_explains_the_day(result)
        assert rows["fees"]["statement_cents"] == day.outcome.totals.fees_cents > 0
        _actual_is_what_the_statement_moved(verdicts_of(engine, result), rows)
        for category in ("pix_received", "refunds_sent", "payouts"):
            assert rows[category]["difference_cents"] == 0
        assert result.report["balance"]["closing_cents"] == day.outcome.closing_balance_cents
        _day_ends(day, result, "reconciled")


def test_due_date_charges_are_judged_on_what_was_due_the_day_they_were_paid(
    engine: Engine,
) -> None:
    with played(engine, "due-date-charges.json") as day:
        result = _judged(day)
        verdicts = verdicts_of(engine, result)
        for payment in day.outcome.payments:
            verdict = verdicts[("charge", f"{payment.kind}:{payment.txid}")]
            assert verdict.status == payment.outcome, payment.ref
            if payment.paid_cents:
                assert verdict.expected_cents == payment.due_cents, payment.ref
        _day_ends(day, result, "breaks")


def test_refunds_notified_polled_refused_and_med_returns(engine: Engine) -> None:
    with played(engine, "refunds.json") as day:
        result = _judged(day)
        outcome, verdicts = day.outcome, verdicts_of(engine, result)
        status = {
            ref: _status(verdicts, "movement", _movement(outcome, ref).key)
            for ref in ("refund-shoes", "refund-bag", "refund-hat", "refund-coat", "refund-belt")
        }
        assert status["refund-shoes"] == ("matched", False)
        assert status["refund-belt"] == ("matched", False)
        assert status["refund-coat"] == ("matched", False)
        # Found only by polling: the API stands behind it, no webhook ever told.
        assert status["refund-bag"][0] == "missing_webhook"
        refused = verdicts[("movement", _movement(outcome, "refund-hat").key)]
        assert "no money" in refused.reason
        # Each Pix carries its net amount: value less its settled refunds.
        shoes = verdicts[("movement", _movement(outcome, "pix-shoes").key)]
        assert shoes.net_cents == 15_000
        hat = verdicts[("movement", _movement(outcome, "pix-hat").key)]
        assert hat.net_cents == 6_000
        rows = _bridge_explains_the_day(result)
        # The merchant's own refunds and the MED return are apart.
        assert rows["refunds_sent"]["api_cents"] == 5_000 + 8_000 + 3_000
        assert rows["refunds_sent"]["statement_cents"] == 5_000 + 8_000 + 3_000
        assert rows["med_debits"]["statement_cents"] == 12_000
        assert result.report["balance"]["closing_cents"] == outcome.closing_balance_cents
        _day_ends(day, result, "reconciled")


def test_forged_notifications_never_count_and_stop_nothing(engine: Engine) -> None:
    with played(engine, "forged-notifications.json") as day:
        result = _judged(day)
        outcome, verdicts = day.outcome, verdicts_of(engine, result)
        assert _status(verdicts, "payout", "po-supplier-401") == ("settled", False)
        assert _status(verdicts, "payout", "po-forged-5000") == ("unknown_to_provider", True)
        forged = next(c for c in result.report["exceptions"] if c["ref"] == "po-forged-5000")
        assert forged["differs"] == "status"
        assert forged["action"].startswith("do not count this payout")
        keyless = [
            row
            for (subject, _), row in verdicts.items()
            if subject == "payout" and row.ref not in ("po-supplier-401", "po-forged-5000")
        ]
        assert [(row.status, row.exception) for row in keyless] == [("unknown_to_provider", True)]
        assert "cannot be asked" in keyless[0].reason
        # Nobody could ask the provider about it: its action does not say it is unknown there.
        unasked = next(c for c in result.report["exceptions"] if c["ref"] == keyless[0].ref)
        assert "does not know" not in unasked["action"], unasked["action"]
        assert "until the provider confirms it" in unasked["action"], unasked["action"]
        forged_pix = next(n for n in outcome.notifications if n.forged and n.channel == "pix")
        e2e = forged_pix.payload["endToEndId"]
        assert _status(verdicts, "movement", e2e) == ("unconfirmed_webhook", True)
        # Only what the provider stands behind is money.
        totals = result.report["totals"]
        assert totals["debits"]["api"] == totals["debits"]["statement"] == 70_000
        assert totals["credits"]["api"] == totals["credits"]["statement"] == 15_000
        # Nothing forged moved: no sum of ``actual`` counts it.
        _actual_is_what_the_statement_moved(verdicts, _bridge_explains_the_day(result))
        _day_ends(day, result, "breaks")


def test_a_pix_booked_after_midnight_is_matched_across_the_two_days(engine: Engine) -> None:
    with played(engine, "midnight.json") as day:
        result = _judged(day)
        late = _movement(day.outcome, "pix-late").key
        verdicts = verdicts_of(engine, result)
        row = verdicts[("movement", late)]
        assert (row.status, row.exception, row.carried) == ("matched", False, "out")
        rows = _bridge_explains_the_day(result)
        assert rows["pix_received"]["carried_out_cents"] == 7_000
        _actual_is_what_the_statement_moved(verdicts, rows)
        assert rows["pix_received"]["difference_cents"] == 0
        _day_ends(day, result, "reconciled")
        following = day.reconcile(day=day.day + timedelta(days=1))
        row = verdicts_of(engine, following)[("movement", late)]
        assert (row.status, row.exception, row.carried) == ("matched", False, "in")
        assert [item["ref"] for item in following.report["carried_in"]] == [late]
        assert not following.report["exceptions"]


def test_med_cases_blocked_debited_by_case_by_pix_or_by_amount(engine: Engine) -> None:
    with played(engine, "med.json") as day:
        result = _judged(day)
        outcome, verdicts = day.outcome, verdicts_of(engine, result)
        case = {record.ref: record.id for record in outcome.infractions}
        for ref in ("med-tv", "med-phone", "med-watch", "med-lamp"):
            assert _status(verdicts, "infraction", case[ref]) == ("closed", False), ref
        assert _status(verdicts, "infraction", case["med-camera"]) == ("open_case", True)
        assert not [key for key in verdicts if key[0] == "statement"]
        rows = _bridge_explains_the_day(result)
        assert rows["med_debits"]["api_cents"] == rows["med_debits"]["statement_cents"] == 100_000
        med = result.report["med"]
        assert (med["open_cases"], med["at_risk_cents"], med["blocked_cents"]) == (
            1,
            15_000,
            10_000,
        )
        assert med["debited_cents"] == 100_000
        deadlines = {c["case_id"]: c["deadline_at"] for c in med["cases"] if c["state"] == "open"}
        assert set(deadlines) == {case["med-camera"]}
        assert deadlines[case["med-camera"]] is not None
        _day_ends(day, result, "breaks")


def test_pix_automatico_rejected_retrying_and_missed_cycles(engine: Engine) -> None:
    with played(engine, "pix-automatico.json") as day:
        result = _judged(day)
        outcome, verdicts = day.outcome, verdicts_of(engine, result)
        charge = {payment.ref: f"cobr:{payment.txid}" for payment in outcome.payments}
        assert _status(verdicts, "charge", charge["gym-march"]) == ("paid", False)
        rejected = verdicts[("charge", charge["club-march"])]
        assert (rejected.status, rejected.exception) == ("unpaid", True)
        assert "AC06" in rejected.reason
        assert _status(verdicts, "charge", charge["saas-march"]) == ("pending", False)
        missed = [row for row in verdicts.values() if row.status == "missed_cycle"]
        id_rec = outcome.refs["veggie-box"]
        assert [row.ref for row in missed] == [f"rec:{id_rec}:{day.day.isoformat()}"]
        assert missed[0].expected_cents == 6_000
        _day_ends(day, result, "breaks")


def test_with_no_provider_configured_nothing_is_claimed(engine: Engine) -> None:
    for policy in ("api", "none"):
        with played(engine, "fees.json", configured=False, confirm_policy=policy) as day:
            day.node.wait_processed(timeout=20)
            health = httpx.get(day.node.server.url + "/healthz").json()
            assert health["confirmation"] != "by API look-up", health
            result = day.reconcile()
            assert result.verdict.value == "incomplete"
            assert result.exit_code == 2
            because = " ".join(result.report["incomplete_because"])
            assert "no provider API is configured" in because
            if policy == "api":
                # The notified Pix wait for a confirmation nobody can give: no money.
                assert result.report["totals"]["credits"]["api"] == 0
                assert "confirm" in because


def test_a_whole_business_day_breaks_only_where_the_ground_truth_says(engine: Engine) -> None:
    with played(engine, "business-day.json") as day:
        result = _judged(day)
        outcome, verdicts = day.outcome, verdicts_of(engine, result)
        for payment in outcome.payments:
            verdict = verdicts[("charge", f"{payment.kind}:{payment.txid}")]
            assert verdict.status == payment.outcome, payment.ref
        # Money the merchant may have to return carries the last day it can be.
        returnable = [r for r in verdicts.values() if r.status in ("overpaid", "paid_twice")]
        assert returnable
        assert {row.refund_by for row in returnable} == {day.day + timedelta(days=90)}
        # Each exception says what differs and what to do, with the money and the date.
        by_status = {case["status"]: case for case in result.report["exceptions"]}
        overpaid = by_status["overpaid"]
        gap = overpaid["actual_cents"] - overpaid["expected_cents"]
        last_day = (day.day + timedelta(days=90)).strftime("%d/%m/%Y")
        assert overpaid["differs"] == "amount"
        assert overpaid["action"] == (
            f"refund the {brl(gap)} paid over the {brl(overpaid['expected_cents'])} due "
            f"before {last_day}"
        )
        assert by_status["underpaid"]["action"].startswith("ask the payer for the missing R$ ")
        assert result.report["balance"]["closing_cents"] == outcome.closing_balance_cents
        _actual_is_what_the_statement_moved(verdicts, _bridge_explains_the_day(result))
        _day_ends(day, result, "breaks")
