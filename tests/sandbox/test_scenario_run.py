"""The example business day, played over HTTP: its ground truth against the provider's
own books, its times inside the day, and its determinism."""

from __future__ import annotations

from collections import Counter
from datetime import time
from decimal import Decimal

import pytest

from sandbox.scenario import BUSINESS_TZ, ScenarioOutcome, load_scenario
from sandbox.scenario.fields import from_cents, to_cents
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider
from tests.sandbox.scenario_support import EXAMPLE, SECRET, SECRET_HEADER, Post, Recorder, play
from tests.sandbox.scenario_support import recorder_server as recorder_server

Played = tuple[ScenarioOutcome, SandboxProvider, list[Post]]


@pytest.fixture(scope="module")
def played(recorder_server: tuple[Recorder, BackgroundServer]) -> Played:
    recorder, server = recorder_server
    recorder.reset()
    outcome, provider = play(load_scenario(EXAMPLE), server)
    return outcome, provider, list(recorder.posts)


def test_the_closing_balance_is_opening_plus_credits_minus_debits(played: Played) -> None:
    outcome, provider, _ = played
    totals = outcome.totals
    assert outcome.opening_balance_cents == 250_000
    assert outcome.closing_balance_cents == 250_000 + totals.credits_cents - totals.debits_cents
    assert provider.accounts.balance() == from_cents(outcome.closing_balance_cents)
    assert (totals.credits_cents, totals.debits_cents, totals.refunds_cents) == (
        373_390,
        186_787,  # R$ 12,87 of them the provider's fees
        15_500,
    )
    assert totals.fees_cents == 13 * 99


def test_the_statement_lines_are_the_booked_movements(played: Played) -> None:
    outcome, provider, _ = played
    lines = provider.accounts.statement(outcome.day_start, outcome.day_end)
    signed = sum(line["amount"] if line["type"] == "CREDIT" else -line["amount"] for line in lines)
    assert to_cents(signed) == outcome.totals.net_cents

    def line_key(line: dict[str, object]) -> tuple[object, ...]:
        reference = line["infractionId"] or line["endToEndId"]
        return (line["category"], to_cents(str(line["amount"])), reference)

    booked = [m for m in outcome.movements if m.booked]
    # The day's provider books each Pix received's fee as a line of its own, after it.
    fees = [("PIX_RECEIVED_FEE", m.fee_cents, m.end_to_end_id) for m in booked if m.fee_cents]
    assert len(fees) == 13
    assert Counter(map(line_key, lines)) == Counter(
        [
            *(
                (
                    m.statement_category,
                    m.amount_cents,
                    m.key if m.kind == "infraction_debit" else m.end_to_end_id,
                )
                for m in booked
            ),
            *fees,
        ]
    )
    by_category = Counter[str]()
    for line in lines:
        by_category[line["category"]] += to_cents(str(line["amount"]))
    assert dict(by_category) == dict(outcome.totals.by_category)


def test_final_statuses_are_the_providers(played: Played) -> None:
    outcome, provider, _ = played
    for m in outcome.movements:
        if m.kind == "pix_received":
            pix = provider.get_pix(m.key)
            assert pix is not None
            assert to_cents(pix["valor"]) == m.amount_cents
        elif m.kind == "pix_refund":
            assert m.original_end_to_end_id is not None
            pix = provider.get_pix(m.original_end_to_end_id)
            assert pix is not None
            (refund,) = [r for r in pix["devolucoes"] if r["rtrId"] == m.key]
            assert refund["status"] == m.status
        elif m.kind == "payout":
            payment = provider.accounts.payments.get_by_key(m.key)
            assert payment is not None
            assert payment["status"] == m.status
        elif m.kind == "infraction_debit":
            case = provider.accounts.infractions.get(m.key)
            assert case is not None
            assert case["analysisResult"] == "AGREED"
    statuses = {m.ref: m.status for m in outcome.movements}
    assert statuses["po-supplier-002"] == "REJECTED"
    assert outcome.movement("po-supplier-002").error_code == "AC03"
    assert statuses["po-customer-refund"] == "CANCELED"
    assert statuses["po-freelancer"] == "PARTIALLY_REFUNDED"
    assert statuses["refund-1004-b"] == "DEVOLVIDO"
    assert statuses["refund-1003-change"] == "NAO_REALIZADO"
    debited = {i.ref: i.debited for i in outcome.infractions}
    assert debited == {"med-suspicious": True, "med-static-qr": False}


def test_each_charge_ends_as_the_day_says(played: Played) -> None:
    outcome, _, _ = played
    assert {p.ref: p.outcome for p in outcome.payments} == {
        "order-1001": "paid",
        "order-1002": "underpaid",
        "order-1003": "overpaid",
        "order-1004": "partially_refunded",  # paid twice, the second Pix refunded
        "order-1005": "expired",
        "invoice-0301": "paid",
        "invoice-0302": "unpaid",
        "invoice-0225": "paid",  # late, with the fine and the interest
        "invoice-0312": "paid",  # early, with the discount
        "gym-march": "paid",
        "saas-march": "paid",
    }
    saas = next(p for p in outcome.payments if p.ref == "saas-march")
    assert saas.provider_status == "CONCLUIDA"


def test_times_land_at_their_time_of_day(played: Played) -> None:
    outcome, provider, _ = played
    for m in outcome.movements:
        assert outcome.day_start <= m.at < outcome.day_end
    pix = provider.get_pix(outcome.refs["pix-1001"])
    assert pix is not None
    assert pix["horario"] == "2026-03-02T12:12:00.000Z"  # 09:12 in São Paulo
    settled = outcome.movement("refund-1004-b").at.astimezone(BUSINESS_TZ)
    assert settled.time() == time(11, 45)


def test_every_notification_arrives_as_planned(played: Played) -> None:
    outcome, _, posts = played
    assert all(post.headers[SECRET_HEADER.lower()] == SECRET for post in posts)
    received = Counter(identity for post in posts for identity in post.identities)
    planned = Counter(
        {n.identity: n.copies_acknowledged for n in outcome.notifications if n.copies_planned}
    )
    assert received == planned
    assert sum(n.copies_acknowledged for n in outcome.notifications) == outcome.posts_sent
    paths = {post.path for post in posts}
    assert paths == {
        "/webhooks/qrcode/pix",
        "/webhooks/qrcode/rec",
        "/webhooks/qrcode/cobr",
        "/webhooks/accounts",
    }
    assert set(outcome.pix_only_by_polling) == {
        outcome.refs["pix-walk-in"],
        outcome.refs["pix-1002"],
    }


def test_the_same_seed_gives_the_same_day(
    played: Played, recorder_server: tuple[Recorder, BackgroundServer]
) -> None:
    outcome, _, posts = played
    recorder, server = recorder_server
    recorder.reset()
    again, _ = play(load_scenario(EXAMPLE), server)
    assert again.refs == outcome.refs
    assert again.movements == outcome.movements
    assert [post.identities for post in recorder.posts] == [post.identities for post in posts]
    assert again.closing_balance_cents == outcome.closing_balance_cents
    assert Decimal(again.closing_balance_cents) == Decimal(436_603)
