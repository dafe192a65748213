"""What a person should do about each kind of exception, in words, with the money it
involves: finance acts on these lines, so each names the amount and, for money that may
have to go back, the last day it can."""

from __future__ import annotations

from datetime import date

from reconcile.formats import br_date, brl

# Which field of the thing disagrees between the sources, by status.
AMOUNT_STATUSES = ("amount_mismatch", "underpaid", "overpaid", "paid_twice")
DIFFERS = {status: "amount" for status in AMOUNT_STATUSES} | {"paid": "amount"}


def differs(status: str) -> str:
    """``amount`` when the sources disagree on how much, else ``status`` (whether it
    happened at all, or how it ended)."""
    return DIFFERS.get(status, "status")


# The ``ref`` of a payout return's verdict (``reconcile.matching.payouts``).
RETURN_REF = "return:"
# The ``ref`` of a bridge category's difference no item explains (``…matching.bridge``).
UNEXPLAINED_REF = "bridge:"


def _about_a_return(status: str, expected: int | None, actual: int | None) -> str:
    if status == "missing_webhook":
        return (
            f"ask the provider which payout the {brl(expected)} credited as a return belongs "
            "to, and pay nobody again until you know"
        )
    if status == "unconfirmed_webhook":
        return f"do not count this return of {brl(actual)}: the provider does not stand behind it"
    if status == "amount_mismatch":
        return f"ask the provider: a return of {brl(actual)}, credited as {brl(expected)}"
    return f"ask the provider why the return of {brl(actual)} was not credited as notified"


def _about_a_payout(status: str, expected: int | None, actual: int | None) -> str:
    # ``expected`` is what the statement debited, ``actual`` what was notified.
    if status == "missing_webhook":
        return (
            f"ask the provider which payout the {brl(expected)} debited belongs to, and pay "
            "nobody again until you know"
        )
    if status == "unknown_to_provider":
        return (
            f"do not count this payout of {brl(actual)}: the provider does not know it; find "
            "out who sent the notification"
        )
    if status == "amount_mismatch":
        return f"ask the provider why it paid {brl(actual)} instead of {brl(expected)}"
    paid = actual if actual is not None else expected
    return f"check the status of the payout of {brl(paid)} with the provider before paying again"


def _by(refund_by: date | None) -> str:
    return f" before {br_date(refund_by)}" if refund_by is not None else ""


def suggested_action(
    subject: str,
    status: str,
    expected: int | None,
    actual: int | None,
    refund_by: date | None = None,
    ref: str = "",
) -> str:
    gap = abs((actual or 0) - (expected or 0))
    if subject == "movement" and ref.startswith(RETURN_REF):
        return _about_a_return(status, expected, actual)
    if subject == "charge":
        if status == "overpaid":
            return f"refund {brl(gap)} of the overpaid {brl(actual)}{_by(refund_by)}"
        if status == "paid_twice":
            return f"refund the second payment ({brl(gap)}){_by(refund_by)}"
        if status == "underpaid":
            return f"ask the payer for the missing {brl(gap)}"
        if status in ("unpaid", "expired"):
            return f"follow up with the payer: {brl(expected)} was not paid"
        return (
            f"check the terms of the charge of {brl(expected)} with the provider: the Pix "
            "itemised another amount"
        )
    if subject == "payout":
        return _about_a_payout(status, expected, actual)
    if subject == "movement":
        if status == "unconfirmed_webhook":
            # Only the notification names an amount; the API stands behind none.
            notified = actual if actual is not None else expected
            return f"do not deliver: the provider does not know this payment of {brl(notified)}"
        if status == "missing_webhook":
            return (
                f"a payment of {brl(actual)} nobody notified: match it to an order, or "
                f"refund it{_by(refund_by)}"
            )
        if status == "amount_mismatch":
            return f"ask the provider: notified {brl(expected)}, it stands behind {brl(actual)}"
        booked = actual if actual is not None else expected
        return f"ask the provider why the statement does not book the {brl(booked)}"
    if subject == "infraction":
        if status == "open_case":
            return f"answer the MED case before its deadline: {brl(expected)} may be debited"
        if status == "debit_without_case":
            return f"ask the provider which MED case the debit of {brl(actual)} belongs to"
        if status == "debit_never_came":
            return f"ask the provider about the MED debit of {brl(expected)} it announced"
        return f"dispute the MED debit: {brl(actual)} against {brl(expected)} in the case"
    if subject == "statement" and ref.startswith(UNEXPLAINED_REF):
        return (
            f"compare the day's statement with pixrecon's items of this kind (pixrecon "
            f"export): {brl(gap)} is explained by none of them; report it to pixrecon's team"
        )
    if subject == "statement":
        return f"ask the provider what the statement line of {brl(actual)} is"
    if subject == "recurrence":
        cycle = f" of {brl(expected)}" if expected is not None else ""
        return (
            f"create the recurring charge for the next cycle; ask the payer about this one{cycle}"
        )
    return "read the reason and the items that decided it"
