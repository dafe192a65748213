"""What a person should do about each kind of exception, in words, with the money it
involves: finance acts on these lines, so each names the amount and, for money that may
have to go back, the last day it can."""

from __future__ import annotations

from datetime import date, datetime

from reconcile.formats import br_date, brl, sp_time
from reconcile.timeutil import BUSINESS_TZ, as_utc

# Which field of the thing disagrees between the sources, by status.
AMOUNT_STATUSES = ("amount_mismatch", "underpaid", "overpaid", "paid_twice")
DIFFERS = {status: "amount" for status in AMOUNT_STATUSES} | {"paid": "amount"}


def differs(status: str) -> str:
    """``amount`` when the sources disagree on how much, else ``status`` (whether it
    happened at all, or how it ended)."""
    return DIFFERS.get(status, "status")


def notified_amount(expected: int | None, actual: int | None) -> int | None:
    """The amount a notification the provider does not stand behind stated: its verdict's
    ``expected`` (its ``actual`` is only what a statement line booked of it, NULL when
    none did: reconcile.matching.verdicts). A verdict written before it was so carried it
    in ``actual`` and nothing in ``expected``."""
    return expected if expected is not None else actual


# The ``ref`` of a payout return's verdict (``reconcile.matching.payouts``).
RETURN_REF = "return:"
# That of a Pix credit the accounts API notified (``RECEIVE``), by its reference there
# (``reconcile.matching.credits``).
CREDIT_REF = "credit:"
# That of a recurring charge's notification (``reconcile.matching.automatico``).
COBR_REF = "cobr:"
# The ``ref`` of a bridge category's difference no item explains (``…matching.bridge``).
UNEXPLAINED_REF = "bridge:"
# That of a notification repeated under its key with other money, by the key of its
# inbox item (``reconcile.matching.repeats``).
REPEAT_REF = "repeat:"


def is_refund_ref(ref: str) -> bool:
    """Whether a movement's ``ref`` names a refund of a Pix received: its ``rtrId``
    (``D…``), or, when the notification gave none, ``{endToEndId}:{id}``
    (``reconcile.matching.movements.refund_ref``). A Pix's own is its bare endToEndId."""
    if ref.startswith("D"):
        return True
    return ":" in ref and not ref.startswith((RETURN_REF, CREDIT_REF, UNEXPLAINED_REF, REPEAT_REF))


REFUNDS_EXCEED = "refunds settled exceed the Pix they refund"
"""How a refund's reason begins when, with it, its Pix's refunds exceed the Pix
(``matching/movements.py``)."""

STATED_OTHERWISE = "than the provider's API"
"""How a payout return's reason says that a notification stated another amount than the
API (``matching/payouts.py``): ``expected`` is then the API's, not the statement's."""


def _about_a_return(
    status: str, expected: int | None, actual: int | None, reason: str | None
) -> str:
    if status == "amount_mismatch" and reason is not None and STATED_OTHERWISE in reason:
        return (
            f"count the return as the {brl(expected)} the provider's API states, not the "
            f"{brl(actual)} notified: find out who sent that notification"
        )
    if status == "missing_webhook":
        return (
            f"ask the provider which payout the {brl(expected)} credited as a return belongs "
            "to, and pay nobody again until you know"
        )
    if status == "unconfirmed_webhook":
        return (
            f"do not count this return of {brl(notified_amount(expected, actual))}: the "
            "provider does not stand behind it"
        )
    if status == "unknown_to_provider":
        # The API does not stand behind the payout it returns: nothing of it was credited
        # as far as anyone knows, so nothing was "not credited as notified".
        return (
            f"do not count this return of {brl(notified_amount(expected, actual))}: the "
            "provider does not stand behind "
            "the payout it returns; ask the provider whether it sent this notification, and "
            "find out who did if not"
        )
    if status == "amount_mismatch":
        return f"ask the provider: a return of {brl(actual)}, credited as {brl(expected)}"
    return f"ask the provider why the return of {brl(actual)} was not credited as notified"


# How a payout's reason begins when the provider's API contradicts its notification
# (``matching/payouts.py``): the action depends on which way.
API_SAYS_PAID = "the provider's API says this payout was paid out"
API_SAYS_NOT_PAID = "the provider's API says this payout was not paid out"
API_STILL_PROCESSING = "it still has it in progress"
# How a payout's reason says the provider was never asked about it, or has not answered
# (``matching/payouts.py``): neither says that the provider does not know it.
PAYOUT_UNASKABLE = "the provider cannot be asked"
PAYOUT_NOT_CONFIRMED = "not confirmed by the provider within the grace period"


def _about_a_payout(
    status: str, expected: int | None, actual: int | None, reason: str | None = None, ref: str = ""
) -> str:
    # ``expected`` is what the statement debited, ``actual`` what was notified; for a
    # payout the provider does not know, ``expected`` is what was notified.
    said = reason or ""
    paid = actual if actual is not None else expected
    if status == "status_mismatch" and API_SAYS_PAID in said:
        # The money left: "paying again" here would pay the recipient twice.
        return (
            f"do not pay it again: the payout of {brl(paid)} was paid out, as the provider's "
            "API states; ask the provider who sent the notification that said otherwise"
        )
    if status == "status_mismatch" and API_SAYS_NOT_PAID in said:
        claimed = expected if expected is not None else actual
        return (
            f"do not count the payout of {brl(claimed)} as paid: the provider's API says it was "
            "not; pay the recipient again only if it is still owed, and ask the provider who "
            "sent the notification that said it was settled"
        )
    if status == "status_mismatch" and API_STILL_PROCESSING in said:
        return (
            f"wait for the provider's outcome of the payout of {brl(paid)} before counting "
            "it or paying again: its API still has it in progress"
        )
    if status == "missing_webhook":
        return (
            f"ask the provider which payout the {brl(expected)} debited belongs to, and pay "
            "nobody again until you know"
        )
    # What a payout the provider does not know was notified for.
    notified = notified_amount(expected, actual)
    if status == "unknown_to_provider" and PAYOUT_UNASKABLE in said:
        # Nobody asked the provider: saying it does not know the payout would claim more
        # than is known.
        return (
            f"do not count this payout of {brl(notified)} until the provider confirms it: the "
            "notification gives no idempotencyKey or endToEndId to look it up by; ask the "
            f"provider about its id {ref or 'as notified'}, and who sent the notification"
        )
    if status == "unknown_to_provider" and PAYOUT_NOT_CONFIRMED in said:
        return (
            f"do not count this payout of {brl(notified)} until the provider confirms it: its "
            "API has not confirmed it within the grace period; ask the provider whether it "
            "made it"
        )
    if status == "unknown_to_provider":
        return (
            f"do not count this payout of {brl(notified)}: the provider does not know it; find "
            "out who sent the notification"
        )
    if status == "amount_mismatch":
        if expected is None:
            return (
                f"ask the provider which amount of the payout notified as {brl(actual)} is "
                "right: its API states another"
            )
        return (
            f"ask the provider why the statement debited {brl(expected)} for a payout "
            f"notified as {brl(actual)}"
        )
    return f"check the status of the payout of {brl(paid)} with the provider before paying again"


def _give_back(what: str, refund_by: date | None, today: date | None) -> str:
    """Refund ``what`` by its last day; once that day is past (as of ``today``, for a
    person working on the case) the Pix can no longer be refunded, only paid back."""
    if refund_by is None:
        return f"refund {what}"
    if today is not None and today > refund_by:
        return (
            f"pay {what} back to the payer with a new Pix: the time to refund it ended on "
            f"{br_date(refund_by)}"
        )
    return f"refund {what} before {br_date(refund_by)}"


def _paid_twice(expected: int, actual: int, refund_by: date | None, today: date | None) -> str:
    """The Pix that paid one charge, together: what they paid over what was due is the
    payer's to get back, whichever Pix it came in. Each Pix need not have been for the
    whole amount (a payer may split it), so no one Pix is the one to refund."""
    if actual > expected:
        return _give_back(
            f"the {brl(actual - expected)} its Pix paid over the {brl(expected)} due",
            refund_by,
            today,
        )
    if actual == expected:
        return (
            f"nothing to refund: its Pix add up to the {brl(expected)} due, paid in parts, "
            "with nothing paid over"
        )
    return (
        f"nothing was paid over: its Pix add up to {brl(actual)} of the {brl(expected)} "
        f"due; ask the payer for the missing {brl(expected - actual)}"
    )


NO_ATTEMPT_LEFT = "no attempt is left"
"""How a recurring charge's reason says its debit was rejected for good
(``matching/automatico.py``)."""

# How a Pix Automático notification's reason says why it is not counted
# (``matching/automatico.py``): the action depends on which.
API_DOES_NOT_KNOW = "the provider's API does not know it"
API_HAS_NOT_CONFIRMED = "the provider's API has not confirmed it"
API_CONTRADICTS = "the provider's API contradicts it"


def _about_automatico(status: str, expected: int | None, ref: str, reason: str | None) -> str:
    """A missed cycle (``rec:{idRec}:{due date}``), or a recurrence (``rec:{idRec}``) or
    recurring charge (``cobr:{txid}``) notified that the provider's API does not stand
    behind: nothing of that notification was counted."""
    of = f" of {brl(expected)}" if expected is not None else ""
    if status == "missed_cycle":
        due = ref.rsplit(":", 1)[-1]
        try:
            cycle = f"the cycle{of} due {br_date(date.fromisoformat(due))}"
        except ValueError:
            cycle = f"this cycle{of}"
        return (
            f"check why no recurring charge was created for {cycle}: nothing will be debited "
            "for it; charge the payer for it again another way, and make sure the next "
            "cycle's charge is created in time"
        )
    what = "recurring charge" if ref.startswith(COBR_REF) else "recurrence"
    said = reason or ""
    if API_HAS_NOT_CONFIRMED in said:
        return (
            f"do not count the {what}{of} as notified until the provider's API confirms it; "
            "ask the provider whether it sent this notification"
        )
    if API_CONTRADICTS in said:
        return (
            f"do not count the {what}{of} as notified: act on it as the provider's API "
            "states it (see why); check with the provider whether it sent this "
            "notification, and find out who did if not (possible forgery)"
        )
    return (
        f"do not count the {what}{of} notified: the provider's API does not know it; ask the "
        "provider whether it sent this notification, and find out who did if not (possible "
        "forgery)"
    )


# How a MED closing's reason says what the provider's API states of a case notified
# closed (``matching/infractions.py``).
MED_API_STATES_OPEN = "the provider's API states the case still open"
MED_API_STATES_NO_DEBIT = "the provider's API states it closed with nothing debited"


def _about_a_repeat(status: str, expected: int | None) -> str:
    # ``expected`` is what the first notification stated; the repeat's money is in the
    # reason, and in no amount column: it moved nothing of its own (docs/exports.md).
    what = "other money" if status == "amount_mismatch" else "another payout, Pix or outcome"
    return (
        f"count the {brl(expected)} only as the provider's API states it: a later "
        f"notification under the same key stated {what} (see why); ask the provider "
        "whether it sent both, and find out who sent the other if not"
    )


API_STATES_OTHERWISE = "the provider's API states another outcome"
"""How a refund's reason says the API knows it in another final state than notified,
when what it stated was not kept (refunds confirmed before it was)."""

REFUND_OUTCOMES = {"DEVOLVIDO": "made", "NAO_REALIZADO": "not made"}
"""A refund's final states, in words."""


def api_states_refund(status: str) -> str:
    """How a refund's reason names the final state the API states of it."""
    return f"the provider's API states the refund {status} ({REFUND_OUTCOMES[status]})"


ITEMISED_OTHERWISE = "the Pix itemised"
"""How a due-date charge's reason begins to say that the Pix's own breakdown
(``componentesValor``) disagrees with the charge's terms (``matching/amount_due.py``)."""


def _blocked_of(blocked: int | None) -> str:
    """How much of a MED case's amount the provider already holds: money finance cannot
    spend while the case is open. Said only when the provider stated it."""
    if blocked is None:
        return ""
    if blocked == 0:
        return " (none of it blocked yet)"
    return f" ({brl(blocked)} of it already blocked in the account)"


def suggested_action(
    subject: str,
    status: str,
    expected: int | None,
    actual: int | None,
    refund_by: date | None = None,
    ref: str = "",
    today: date | None = None,
    deadline: datetime | None = None,
    reason: str | None = None,
    blocked: int | None = None,
) -> str:
    """In words, what a person does about the exception. ``today``: when a person reads
    it (the lists they work from), so that money whose last day to be refunded has passed
    is paid back instead; without it, as of the day judged. ``reason``: the verdict's,
    which says when the Pix itemised another amount than the charge's terms. ``deadline``
    and ``blocked``: an open MED case's analysis deadline and the amount the provider has
    blocked of it (``reconcile.references.med_terms``)."""
    gap = abs((actual or 0) - (expected or 0))
    if ref.startswith(REPEAT_REF):
        return _about_a_repeat(status, expected)
    if subject == "movement" and ref.startswith(RETURN_REF):
        return _about_a_return(status, expected, actual, reason)
    if subject == "charge" and reason is not None and ITEMISED_OTHERWISE in reason:
        # Which amount was due is in doubt: asking the payer for more, or giving some
        # back, before the provider answers would act on a figure that may be wrong.
        return (
            f"ask the provider which amount was due on the charge of {brl(expected)} (the "
            "Pix itemised another), before asking the payer for more or giving any back"
        )
    if subject == "charge":
        if status == "overpaid":
            # What was paid over what was due: the payer's money to give back.
            return _give_back(f"the {brl(gap)} paid over the {brl(expected)} due", refund_by, today)
        if status == "paid_twice":
            return _paid_twice(expected or 0, actual or 0, refund_by, today)
        if status == "underpaid":
            return f"ask the payer for the missing {brl(gap)}"
        if status == "unpaid" and ref.startswith(COBR_REF) and reason and NO_ATTEMPT_LEFT in reason:
            # No debit will come: waiting on the recurrence collects nothing.
            return (
                f"ask the payer to pay the {brl(expected)} of this recurring charge another "
                "way (a Pix or a new charge): their bank rejected its debit and no retry is left"
            )
        if status in ("unpaid", "expired"):
            return f"follow up with the payer: {brl(expected)} was not paid"
        return (
            f"check the terms of the charge of {brl(expected)} with the provider: the Pix "
            "itemised another amount"
        )
    if subject == "payout":
        return _about_a_payout(status, expected, actual, reason, ref)
    if subject == "movement":
        if status == "unconfirmed_webhook":
            # Only the notification names an amount; the API stands behind none.
            notified = notified_amount(expected, actual)
            if is_refund_ref(ref):
                # A refund's rtrId: money said to have left, which nobody stands behind.
                return (
                    f"ask the provider about the refund of {brl(notified)}: its API does not "
                    "know it, so it is not counted as sent"
                )
            return f"do not deliver: the provider does not know this payment of {brl(notified)}"
        if status == "missing_webhook":
            # Nobody notified it: the statement's amount is the only one.
            booked = actual if actual is not None else expected
            if is_refund_ref(ref):
                # A refund's rtrId: money that left, not money to give back.
                return (
                    f"ask the provider which Pix the refund of {brl(booked)} debited returns: "
                    "no refund of that id was notified or polled"
                )
            return (
                f"a payment of {brl(booked)} nobody notified: match it to an order, or "
                + _give_back("it", refund_by, today)
            )
        if status == "amount_mismatch":
            # ``actual`` is what was notified, ``expected`` what the provider's API or
            # statement stands behind (reconcile.matching.movements).
            if is_refund_ref(ref) and reason is not None and REFUNDS_EXCEED in reason:
                return (
                    f"ask the provider why the refund of {brl(actual)} was made: with it, the "
                    "refunds of its Pix exceed what the Pix received; ask the payer to give "
                    "back what was refunded over it"
                )
            if expected is None or expected == actual:
                return (
                    f"ask the provider which amount of the Pix of {brl(actual)} is right: "
                    "its records disagree (see why)"
                )
            return f"ask the provider: notified {brl(actual)}, it stands behind {brl(expected)}"
        booked = actual if actual is not None else expected
        if reason is not None and api_states_refund("DEVOLVIDO") in reason:
            # Notified as not made, made as the API states: the payer has the money.
            return (
                f"do not refund the payer again: {api_states_refund('DEVOLVIDO')} of "
                f"{brl(expected if expected is not None else actual)}; ask the provider who "
                "sent the notification saying it was not made (possible forgery)"
            )
        if reason is not None and api_states_refund("NAO_REALIZADO") in reason:
            asked = expected if expected is not None else actual
            return (
                f"do not count the refund of {brl(asked)} as sent: "
                f"{api_states_refund('NAO_REALIZADO')}, so the payer may still be owed it; "
                "ask the provider who sent the notification saying it was made (possible "
                "forgery)"
            )
        if reason is not None and API_STATES_OTHERWISE in reason:
            # ``expected`` is what the notification said was refunded.
            asked = expected if expected is not None else actual
            return (
                f"ask the provider about the refund of {brl(asked)} notified as made: its "
                "API states another outcome, so it is not counted as sent (the payer may "
                "still be owed it)"
            )
        return f"ask the provider why the statement does not book the {brl(booked)}"
    if subject == "infraction":
        if status == "open_case":
            # The provider's analysis deadline (``med_deadlines``): the day finance acts by.
            ended = deadline is not None and as_utc(deadline).astimezone(BUSINESS_TZ).date()
            held = _blocked_of(blocked)
            if ended and today is not None and today > ended:
                # Answering is no longer possible: what is left is learning the outcome.
                return (
                    f"ask the provider how the MED case was decided: the time to answer it "
                    f"ended on {sp_time(deadline)}, and {brl(expected)} may have been "
                    f"debited{held}"
                )
            by = f"by {sp_time(deadline)}" if deadline is not None else "before its deadline"
            return f"answer the MED case {by}: {brl(expected)} may be debited{held}"
        if status == "unconfirmed_webhook":
            return (
                f"ask the provider about the MED case notified for {brl(expected)}: its API "
                "does not stand behind the notification (possible forgery), so nothing of it "
                "is counted"
            )
        if status == "status_mismatch":
            # ``expected`` is the debit notified, ``actual`` what a line booked of the case
            # (reconcile.matching.infractions).
            said = reason or ""
            if MED_API_STATES_OPEN in said:
                stated = MED_API_STATES_OPEN
            elif MED_API_STATES_NO_DEBIT in said:
                stated = MED_API_STATES_NO_DEBIT
            else:
                stated = "the provider's API states another debit for its closing"
            line = f"; the statement booked {brl(actual)} of it" if actual else ""
            return (
                f"do not book the MED debit of {brl(expected or 0)} notified: {stated} "
                f"(possible forgery){line}; find out who sent the notification"
            )
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
        return _about_automatico(status, expected, ref, reason)
    return "read the reason and the items that decided it"
