"""Finance acts on an exception's action line: every kind of exception names the money it
involves, in reais as people write them."""

from __future__ import annotations

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


def test_a_cycle_whose_amount_is_unknown_names_none() -> None:
    action = suggested_action("recurrence", "missed_cycle", None, None)
    assert "R$" not in action
    assert "—" not in action
