"""Finance acts on an exception's action line: every kind of exception names the money it
involves, in reais as people write them."""

from __future__ import annotations

from datetime import date

import pytest

from reconcile.actions import suggested_action

EXCEPTIONS = [
    ("charge", "overpaid", ""),
    ("charge", "paid_twice", ""),
    ("charge", "underpaid", ""),
    ("charge", "unpaid", ""),
    ("charge", "expired", ""),
    ("charge", "paid", ""),
    ("payout", "missing_webhook", ""),
    ("payout", "unknown_to_provider", ""),
    ("payout", "amount_mismatch", ""),
    ("payout", "status_mismatch", ""),
    ("movement", "unconfirmed_webhook", ""),
    ("movement", "missing_webhook", ""),
    ("movement", "amount_mismatch", ""),
    ("movement", "status_mismatch", ""),
    ("movement", "missing_webhook", "return:D1"),
    ("movement", "unconfirmed_webhook", "return:D1"),
    ("movement", "amount_mismatch", "return:D1"),
    ("movement", "status_mismatch", "return:D1"),
    ("infraction", "open_case", ""),
    ("infraction", "debit_without_case", ""),
    ("infraction", "debit_never_came", ""),
    ("infraction", "amount_mismatch", ""),
    ("statement", "unexplained", ""),
    ("statement", "unexplained", "bridge:payouts"),
    ("recurrence", "missed_cycle", ""),
]


@pytest.mark.parametrize(("subject", "status", "ref"), EXCEPTIONS)
def test_every_action_names_the_money_in_reais(subject: str, status: str, ref: str) -> None:
    action = suggested_action(subject, status, 123_456, 120_000, ref=ref)
    assert "R$ 1.234,56" in action or "R$ 1.200,00" in action or "R$ 34,56" in action, action


def test_a_charge_paid_twice_in_full_refunds_what_was_paid_over() -> None:
    action = suggested_action("charge", "paid_twice", 4_000, 8_000, refund_by=date(2026, 6, 2))
    assert action == "refund the R$ 40,00 its Pix paid over the R$ 40,00 due before 02/06/2026"


def test_a_charge_paid_twice_over_its_amount_refunds_only_the_excess() -> None:
    """30.00 and then 15.00 for 40.00: 5.00 goes back, not the second Pix."""
    action = suggested_action("charge", "paid_twice", 4_000, 4_500, refund_by=date(2026, 6, 2))
    assert action.startswith("refund the R$ 5,00 its Pix paid over the R$ 40,00 due")


def test_a_charge_paid_in_parts_that_add_up_to_it_has_nothing_to_refund() -> None:
    """30.00 and then 10.00 for 40.00: nothing was paid over, so no refund of R$ 0,00."""
    action = suggested_action("charge", "paid_twice", 4_000, 4_000, refund_by=date(2026, 6, 2))
    assert action.startswith("nothing to refund"), action
    assert "R$ 40,00 due" in action
    assert "R$ 0,00" not in action
    assert "refund the" not in action


def test_a_charge_paid_in_parts_short_of_it_asks_for_the_rest() -> None:
    action = suggested_action("charge", "paid_twice", 4_000, 3_000, refund_by=date(2026, 6, 2))
    assert "nothing was paid over" in action
    assert "R$ 30,00 of the R$ 40,00 due" in action
    assert action.endswith("ask the payer for the missing R$ 10,00")
    assert "refund" not in action


def test_a_cycle_whose_amount_is_unknown_names_none() -> None:
    action = suggested_action("recurrence", "missed_cycle", None, None)
    assert "R$" not in action
    assert "—" not in action


@pytest.mark.parametrize(
    "ref",
    [
        "D12345678202603101000abcdefghij1",  # by its rtrId
        "E12345678202603101000abcdefghij1:devolucao-1",  # notified without one
    ],
)
def test_a_refund_nobody_stands_behind_is_money_that_left_not_a_sale(ref: str) -> None:
    forged = suggested_action("movement", "unconfirmed_webhook", None, 7_000, ref=ref)
    assert forged.startswith("ask the provider about the refund of R$ 70,00"), forged
    unnotified = suggested_action("movement", "missing_webhook", 7_000, None, ref=ref)
    assert "which Pix the refund of R$ 70,00" in unnotified, unnotified


def test_a_sale_nobody_stands_behind_is_not_delivered() -> None:
    e2e = "E12345678202603101000abcdefghij1"
    for ref in (e2e, "credit:rcv-1"):
        action = suggested_action("movement", "unconfirmed_webhook", None, 7_000, ref=ref)
        assert action.startswith("do not deliver"), (ref, action)


UNASKABLE = "notified without an idempotencyKey or endToEndId: the provider cannot be asked"


@pytest.mark.parametrize(
    "reason",
    [
        # reconcile.matching.payouts: the provider was never asked, or has not answered.
        UNASKABLE,
        "not confirmed by the provider within the grace period: do not count it",
    ],
)
def test_a_payout_nobody_could_confirm_is_not_said_unknown_to_the_provider(reason: str) -> None:
    """Only a payout the provider's API was asked about and denies is one it "does not
    know": of the others nothing is known but that nobody stands behind them yet."""
    action = suggested_action(
        "payout", "unknown_to_provider", None, 3_000, ref="932695443", reason=reason
    )
    assert "does not know" not in action, action
    assert action.startswith("do not count this payout of R$ 30,00 until the provider confirms")
    denied = suggested_action(
        "payout",
        "unknown_to_provider",
        None,
        3_000,
        reason="notified, but the provider does not know this payout: do not count it",
    )
    assert "the provider does not know it" in denied, denied
    unaskable = suggested_action(
        "payout", "unknown_to_provider", None, 3_000, ref="932695443", reason=UNASKABLE
    )
    assert "ask the provider about its id 932695443" in unaskable, unaskable


def test_a_return_of_a_payout_nobody_stands_behind_is_not_counted() -> None:
    action = suggested_action(
        "movement",
        "unknown_to_provider",
        None,
        10_000,
        ref="return:D12345678202603101000abcdefghij1",
        reason="a return notified, but the provider does not stand behind its payout: do not "
        "count it",
    )
    assert action.startswith("do not count this return of R$ 100,00"), action
    assert "not credited as notified" not in action, action


def test_a_recurring_debit_rejected_for_good_asks_the_payer_to_pay_another_way() -> None:
    action = suggested_action(
        "charge",
        "unpaid",
        3_500,
        None,
        ref="cobr:bWS71VKyr8mvIKzaEa6LPjoFlY5bmTbR",
        reason="the payer's bank rejected the debit (AC06), and no attempt is left: ask the "
        "payer to pay otherwise",
    )
    assert action.startswith("ask the payer to pay the R$ 35,00 of this recurring charge"), action
    # A charge still waiting for its payment is only followed up.
    waiting = suggested_action("charge", "unpaid", 3_500, None, ref="cob:abc")
    assert waiting == "follow up with the payer: R$ 35,00 was not paid"
