"""The balance drift must not depend on the order in which workers stored the statement's
lines: lines booked in the same millisecond are common on a busy account."""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine

from reconcile.db import session_scope
from reconcile.matching.context import RunContext
from reconcile.matching.totals import balance_drift
from reconcile.models import InboxItem, StatementEntry
from reconcile.timeutil import business_day_bounds

DAY = date(2026, 3, 10)
START, _ = business_day_bounds(DAY)


def _ledger(opening: int, amounts: list[int], instants: list[datetime]) -> list[dict[str, Any]]:
    """Lines as the provider books them: in order, each with its running balance."""
    balance, lines = opening, []
    for n, (amount, at) in enumerate(zip(amounts, instants, strict=True)):
        balance += amount
        lines.append(
            {
                "entry_id": f"line-{n}",
                "type": "CREDIT" if amount > 0 else "DEBIT",
                "amount_cents": abs(amount),
                "balance_after_cents": balance,
                "booked_at": at,
            }
        )
    return lines


def _store(engine: Engine, lines: list[dict[str, Any]]) -> None:
    with session_scope(engine) as session:
        for line in lines:
            item = InboxItem(
                source="poll",
                kind="statement_line",
                key=f"statement:{line['entry_id']}",
                payload="{}",
            )
            session.add(item)
            session.flush()
            assert item.id is not None
            session.add(StatementEntry(inbox_item_id=item.id, **line))


def _drift(engine: Engine) -> dict[str, object]:
    ctx = RunContext.for_day(1, DAY, START + timedelta(days=1), statement_known=True)
    with session_scope(engine) as session:
        return balance_drift(session, ctx)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_lines_sharing_an_instant_stored_in_any_order_give_no_drift(
    engine: Engine, seed: int
) -> None:
    rng = random.Random(seed)
    first, last = START + timedelta(hours=9), START + timedelta(hours=20)
    # Five lines in the day's first millisecond and four in its last, one debit among them.
    instants = [first] * 5 + [first + timedelta(hours=h) for h in (1, 2, 3)] + [last] * 4
    amounts = [rng.randint(100, 99_999) for _ in instants]
    amounts[2] = -50
    lines = _ledger(1_000_00, amounts, instants)
    rng.shuffle(lines)
    _store(engine, lines)

    report = _drift(engine)

    assert report["opening_cents"] == 1_000_00
    assert report["closing_cents"] == 1_000_00 + sum(amounts)
    assert report["drift_cents"] == 0


def test_a_line_missing_from_what_was_polled_shows_as_drift(engine: Engine) -> None:
    first = START + timedelta(hours=9)
    instants = [first + timedelta(minutes=m) for m in range(6)]
    amounts = [1_00, 2_00, 3_00, 4_00, 5_00, 6_00]
    lines = _ledger(0, amounts, instants)
    del lines[3]
    _store(engine, lines)

    # opening + credits - debits - closing: the 4.00 credit the statement lacks.
    assert _drift(engine)["drift_cents"] == -4_00
