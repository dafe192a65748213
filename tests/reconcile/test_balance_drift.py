"""The balance drift must not depend on the order in which workers stored the statement's
lines: lines booked in the same millisecond are common on a busy account."""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from sqlalchemy import Engine

from reconcile.db import session_scope
from reconcile.exports.statement import statement_lines
from reconcile.matching.context import RunContext
from reconcile.matching.totals import balance_drift, chain_order
from reconcile.models import InboxItem, StatementEntry
from reconcile.timeutil import business_day_bounds

DAY = date(2026, 3, 10)
START, _ = business_day_bounds(DAY)


def _ledger(
    opening: int, amounts: list[int], instants: list[datetime], name: str = "line"
) -> list[dict[str, Any]]:
    """Lines as the provider books them: in order, each with its running balance."""
    balance, lines = opening, []
    for n, (amount, at) in enumerate(zip(amounts, instants, strict=True)):
        balance += amount
        lines.append(
            {
                "entry_id": f"{name}-{n}",
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


def test_a_quiet_day_closes_where_the_statement_left_the_balance(engine: Engine) -> None:
    """No line on the day and no balance reading before it: the last line booked before
    the day says where the balance stood, and nothing moved it."""
    day_before = START - timedelta(hours=5)
    _store(engine, _ledger(1_000_00, [250_00, -40_00, 7_00], [day_before] * 3))

    report = _drift(engine)

    assert (report["opening_cents"], report["closing_cents"]) == (1_217_00, 1_217_00)
    assert report["drift_cents"] is None


def test_a_day_with_no_line_and_no_balance_known_has_none(engine: Engine) -> None:
    report = _drift(engine)
    assert (report["opening_cents"], report["closing_cents"]) == (None, None)


@given(
    st.lists(
        st.integers(min_value=-50_000, max_value=50_000).filter(bool), min_size=2, max_size=30
    ),
    st.randoms(use_true_random=False),
)
def test_lines_of_one_instant_are_put_back_in_the_order_the_provider_booked_them(
    amounts: list[int], rng: random.Random
) -> None:
    balances = [1_000_000 + sum(amounts[: n + 1]) for n in range(len(amounts))]
    assume(len(set(balances)) == len(balances) and 1_000_000 not in balances)
    lines = list(zip(balances, amounts, strict=True))
    shuffled = list(range(len(lines)))
    rng.shuffle(shuffled)
    order = chain_order([lines[n] for n in shuffled])
    assert order is not None
    assert [shuffled[n] for n in order] == list(range(len(lines)))


def test_the_statement_export_shows_a_fee_after_the_credit_it_came_from(engine: Engine) -> None:
    """Stored fee first (workers store in any order), exported as booked: the running
    balance never goes back."""
    at = START + timedelta(hours=10)
    credit, fee = _ledger(2_500_00, [99_90, -99], [at, at])
    _store(engine, [fee, credit])
    lines = list(statement_lines(engine, DAY))
    assert [line.entry_id for line in lines] == [credit["entry_id"], fee["entry_id"]]
    assert [line.balance_after_cents for line in lines] == [2_599_90, 2_598_91]


@pytest.mark.parametrize("stored_fee_first", [True, False])
def test_a_pix_and_the_fee_of_its_whole_amount_at_the_days_last_instant(
    engine: Engine, stored_fee_first: bool
) -> None:
    """A 0.50 tip whose fee is capped at 0.50: its two lines cancel, so their balances
    form a cycle that any of them could begin. The balance before them decides: the day
    closes where the tip's fee left it, and the export shows the credit first."""
    morning, last = START + timedelta(hours=9), START + timedelta(hours=23, minutes=45)
    earlier = _ledger(100_00, [45_00, -99], [morning, morning])
    tip, fee = _ledger(earlier[-1]["balance_after_cents"], [50, -50], [last, last], "tip")
    _store(engine, [*earlier, *([fee, tip] if stored_fee_first else [tip, fee])])

    report = _drift(engine)

    assert (report["opening_cents"], report["closing_cents"]) == (100_00, 144_01)
    assert report["drift_cents"] == 0
    exported = list(statement_lines(engine, DAY))
    assert [line.entry_id for line in exported][-2:] == [tip["entry_id"], fee["entry_id"]]
    assert exported[-1].balance_after_cents == 144_01


def test_a_cycle_at_the_days_first_instant_opens_at_the_balance_before_it(engine: Engine) -> None:
    _store(engine, _ledger(300_00, [10_00], [START - timedelta(hours=2)]))
    at = START + timedelta(hours=8)
    tip, fee = _ledger(310_00, [30, -30], [at, at], "tip")
    _store(engine, [fee, tip])
    report = _drift(engine)
    assert (report["opening_cents"], report["closing_cents"], report["drift_cents"]) == (
        310_00,
        310_00,
        0,
    )


def test_a_cycle_begins_where_the_balance_before_it_says() -> None:
    credit, fee = (144_51, 50), (144_01, -50)
    assert chain_order([fee, credit], before=144_01) == [1, 0]
    assert chain_order([credit, fee], before=144_51) == [1, 0]
    # Without the balance before them, money comes in before a fee is taken from it.
    assert chain_order([fee, credit]) == [1, 0]
    # Two credits from different balances in one cycle: no order is sure.
    assert chain_order([(150, 50), (100, -50), (200, 50), (150, -50)]) is None


def test_a_pix_eaten_by_its_fee_on_an_account_with_no_earlier_line(engine: Engine) -> None:
    """The day's first and only lines: a 0.50 Pix and its 0.50 fee, stored fee first, no
    balance known before them. The day opens and closes where the credit began."""
    at = START + timedelta(hours=9)
    tip, fee = _ledger(10_00, [50, -50], [at, at], "tip")
    _store(engine, [fee, tip])
    report = _drift(engine)
    assert (report["opening_cents"], report["closing_cents"], report["drift_cents"]) == (
        10_00,
        10_00,
        0,
    )
    exported = list(statement_lines(engine, DAY))
    assert [line.entry_id for line in exported] == [tip["entry_id"], fee["entry_id"]]
