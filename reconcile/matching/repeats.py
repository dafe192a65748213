"""Conflicting repeats: a notification delivered again under its key stating other money
(another amount; from the accounts API also another payout, Pix or MED outcome).

The receiver keeps the first copy as the item and flags it (``reconcile/inbox.py``,
``CONFLICTING_REPEAT``); only what the provider's API confirms is counted, so the money
adds up whichever copy was true. But one of two notifications of the same movement said
something that did not happen — a forgery, or a provider at fault — and a day must not be
called reconciled while one did: the day the repeat came, the item is an exception.

Judged on the day the repeat arrived (``inbox_item.conflicted_at``), up to the instant the
day is judged as of: a repeat that came later is a later day's, so a day asked again
answers as it did. Found through the partial index of the few flagged items, never by
reading the inbox."""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import Select, insert, select
from sqlmodel import Session

from reconcile.actions import REPEAT_REF
from reconcile.db import table_of
from reconcile.formats import brl
from reconcile.inbox import stated_cents
from reconcile.matching.context import RunContext
from reconcile.models import InboxItem, ReconciliationItem
from reconcile.priorities import EXCEPTION_PRIORITY

# The longest ``ref`` a verdict holds (``ReconciliationItem.ref``).
REF_MAX = 120

# Named with the words the engine gives a notification the provider's API contradicts
# (a payout's, a refund's, a MED closing's): ``amount_mismatch`` when the two state
# different money, ``status_mismatch`` when the same money for another payout, Pix or
# outcome. Not ``unconfirmed_webhook``: the API may well confirm the first copy; it is
# the two notifications that contradict each other.
OTHER_MONEY = (
    "a later notification of this movement under the same key stated other money than "
    "the first ({first} then {repeat}): possible forgery or provider fault; only what the "
    "provider's API confirms is counted"
)
OTHER_OUTCOME = (
    "a later notification of this movement under the same key stated the same money for "
    "another payout, Pix or outcome than the first: possible forgery or provider fault; "
    "only what the provider's API confirms is counted"
)


def repeat_ref(key: str, item_id: int) -> str:
    """``repeat:{inbox key}``: the item's key names the movement and its notification;
    a key too long for a verdict's ``ref`` is named by the item's id instead."""
    ref = REPEAT_REF + key
    return ref if len(ref) <= REF_MAX else f"{REPEAT_REF}item:{item_id}"


def _first_money(kind: str, payload: str) -> int | None:
    try:
        return stated_cents(kind, json.loads(payload, parse_float=Decimal))
    except ValueError:
        return None


def conflicted_between(start: datetime, end: datetime) -> Select[Any]:
    """The items a conflicting repeat first flagged in ``[start, end)``: read through
    their partial index (migration 0033), whatever the size of the inbox."""
    inbox = table_of(InboxItem)
    return (
        select(
            inbox.c.id,
            inbox.c.kind,
            inbox.c.key,
            inbox.c.source,
            inbox.c.payload,
            inbox.c.conflict_amount_cents,
        )
        .where(
            # Said as the index's predicate is, so that SQLite sees the index serves it.
            inbox.c.conflicted_at.is_not(None),
            inbox.c.conflicted_at >= start,
            inbox.c.conflicted_at < end,
        )
        .order_by(inbox.c.key)
    )


def judge_conflicting_repeats(session: Session, ctx: RunContext) -> None:
    found = session.execute(conflicted_between(ctx.start, ctx.as_of)).all()
    rows: list[dict[str, Any]] = []
    for item in found:
        first, repeat = _first_money(item.kind, item.payload), item.conflict_amount_cents
        other_money = first != repeat
        rows.append(
            {
                "run_id": ctx.run_id,
                "subject": "movement",
                "ref": repeat_ref(item.key, item.id),
                "status": "amount_mismatch" if other_money else "status_mismatch",
                "exception": True,
                "reason": (
                    OTHER_MONEY.format(first=brl(first), repeat=brl(repeat))
                    if other_money
                    else OTHER_OUTCOME
                ),
                # What the first notification stated (the item, which the API is asked
                # about); the repeat moved no money of its own, so it is not in ``actual``,
                # whose sum is money that moved (docs/exports.md): the reason names it.
                "expected_cents": first,
                "actual_cents": None,
                "source": item.source,
                "inbox_item_id": item.id,
                "priority": EXCEPTION_PRIORITY,
            }
        )
    if rows:
        session.execute(insert(table_of(ReconciliationItem)), rows)
