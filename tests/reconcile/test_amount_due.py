"""What a due-date charge (cobv) costs on the day it is paid: every modality of fine,
interest, abatement and discount worked out by hand; agreement with the sandbox (which
stands for the provider) for any terms and dates, and on the last day it can be paid; the
terms and a Pix's componentesValor stored as received; and the amount due recorded for
the charges a day's Pix paid."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, select

from reconcile.db import session_scope
from reconcile.inbox import NewItem, dump_json, store_items
from reconcile.matching.amount_due import amount_due_cents, record_amounts_due
from reconcile.models import ExpectedPayment, PixReceived, Source
from reconcile.payloads.charges import Charge, charge_item
from reconcile.processing import process_items
from reconcile.timeutil import business_day_bounds
from sandbox.charge_payloads import parse_value_terms
from sandbox.charges import BUSINESS_TZ, amount_due, last_payable_day
from sandbox.defaults import DEFAULT_PIX_KEY
from sandbox.state import SandboxProvider
from tests.factories import pix
from tests.sandbox.sandbox_support import FakeClock

MONDAY = date(2026, 3, 2)
FRIDAY = date(2026, 3, 13)


def _term(modalidade: int | str, valor: str) -> dict[str, Any]:
    return {"modalidade": modalidade, "valorPerc": valor}


def _dates(*entries: tuple[date, str]) -> list[dict[str, str]]:
    return [{"data": day.isoformat(), "valorPerc": value} for day, value in entries]


# -- Every modality, by hand (original R$ 100.00 unless said) -------------------------


@pytest.mark.parametrize(
    ("terms", "paid_on", "cents"),
    [
        # multa: 1 a value, 2 a percentage; only after the due date.
        ({"multa": _term(1, "5.00")}, MONDAY, 10000),
        ({"multa": _term(1, "5.00")}, MONDAY + timedelta(days=1), 10500),
        ({"multa": _term(2, "2.00")}, MONDAY + timedelta(days=30), 10200),
        # juros 1: R$ 0.50 per calendar day, 7 days late.
        ({"juros": _term(1, "0.50")}, date(2026, 3, 9), 10350),
        # juros 2: 1% per calendar day, 3 days late.
        ({"juros": _term(2, "1.00")}, date(2026, 3, 5), 10300),
        # juros 3: 3% a month of 30 days, 10 days late: 1.00.
        ({"juros": _term(3, "3.00")}, date(2026, 3, 12), 10100),
        # juros 4: 12% a year of 360 days, 30 days late: 1.00.
        ({"juros": _term(4, "12.00")}, date(2026, 4, 1), 10100),
        # juros 5-8 count business days: Mar 3, 4, 5, 6 and 9 (5), not the weekend.
        ({"juros": _term(5, "0.50")}, date(2026, 3, 9), 10250),
        ({"juros": _term(6, "1.00")}, date(2026, 3, 9), 10500),
        # 2.10% a month of 21 business days, 5 of them: 0.50.
        ({"juros": _term(7, "2.10")}, date(2026, 3, 9), 10050),
        # 25.20% a year of 252 business days, 5 of them: 0.50.
        ({"juros": _term(8, "25.20")}, date(2026, 3, 9), 10050),
        # A Saturday or Sunday payment adds no business day: still Mar 3-6 (4).
        ({"juros": _term(6, "1.00")}, date(2026, 3, 8), 10400),
        # No interest on the due date itself.
        ({"juros": _term(2, "1.00")}, MONDAY, 10000),
        # abatimento: 1 a value, 2 a percentage; early, on time or late alike.
        ({"abatimento": _term(1, "10.00")}, MONDAY - timedelta(days=20), 9000),
        ({"abatimento": _term(2, "5.00")}, MONDAY + timedelta(days=3), 9500),
    ],
)
def test_fine_interest_and_abatement(terms: dict[str, Any], paid_on: date, cents: int) -> None:
    assert amount_due_cents(10000, terms, MONDAY, paid_on) == cents


FIXED = {
    "modalidade": 1,
    "descontoDataFixa": _dates((date(2026, 3, 6), "10.00"), (date(2026, 3, 10), "5.00")),
}


@pytest.mark.parametrize(
    ("discount", "paid_on", "cents"),
    [
        # 1: R$ 10.00 until Mar 6, R$ 5.00 until Mar 10: the nearest date in force.
        (FIXED, date(2026, 3, 4), 9000),
        (FIXED, date(2026, 3, 6), 9000),
        (FIXED, date(2026, 3, 9), 9500),
        (FIXED, date(2026, 3, 10), 9500),
        (FIXED, date(2026, 3, 11), 10000),
        # 2: 3% until Mar 6.
        (
            {"modalidade": 2, "descontoDataFixa": _dates((date(2026, 3, 6), "3.00"))},
            date(2026, 3, 5),
            9700,
        ),
        # 3: R$ 0.50 per calendar day early; Mon Mar 9 is 4 days before Fri Mar 13.
        ({"modalidade": 3, "valorPerc": "0.50"}, date(2026, 3, 9), 9800),
        # 4: R$ 0.50 per business day early: from Fri Mar 6, the 5 weekdays Mar 9-13.
        ({"modalidade": 4, "valorPerc": "0.50"}, date(2026, 3, 6), 9750),
        ({"modalidade": 4, "valorPerc": "0.50"}, date(2026, 3, 9), 9800),
        # 5: 0.10% per calendar day, 7 days early.
        ({"modalidade": 5, "valorPerc": "0.10"}, date(2026, 3, 6), 9930),
        # 6: 0.10% per business day, 5 business days early.
        ({"modalidade": 6, "valorPerc": "0.10"}, date(2026, 3, 6), 9950),
        # Per-day discounts stop at the due date, and never turn into a charge after it.
        ({"modalidade": 3, "valorPerc": "0.50"}, FRIDAY, 10000),
        ({"modalidade": 6, "valorPerc": "0.10"}, FRIDAY + timedelta(days=4), 10000),
    ],
)
def test_every_discount_modality(discount: dict[str, Any], paid_on: date, cents: int) -> None:
    assert amount_due_cents(10000, {"desconto": discount}, FRIDAY, paid_on) == cents


def test_two_discounts_until_the_same_date_give_the_larger() -> None:
    discount = {
        "modalidade": 1,
        "descontoDataFixa": _dates((date(2026, 3, 6), "3.00"), (date(2026, 3, 6), "7.00")),
    }
    assert amount_due_cents(10000, {"desconto": discount}, FRIDAY, date(2026, 3, 2)) == 9300


def test_a_weekend_due_date_moves_to_monday_and_everything_follows() -> None:
    saturday = date(2026, 3, 7)
    terms = {"multa": _term(1, "2.00"), "juros": _term(2, "1.00")}
    assert amount_due_cents(10000, terms, saturday, date(2026, 3, 9)) == 10000
    # Tuesday: one day late (from Monday), fine and one day of interest.
    assert amount_due_cents(10000, terms, saturday, date(2026, 3, 10)) == 10300
    # A discount date on a Sunday holds through Monday.
    sunday = {"modalidade": 1, "descontoDataFixa": _dates((date(2026, 3, 8), "4.00"))}
    assert amount_due_cents(10000, {"desconto": sunday}, saturday, date(2026, 3, 9)) == 9600
    # Per-day discounts count to the moved due date: Friday is 3 calendar days before it.
    per_day = {"modalidade": 3, "valorPerc": "1.00"}
    assert amount_due_cents(10000, {"desconto": per_day}, saturday, date(2026, 3, 6)) == 9700


def test_the_specs_componentes_valor_example() -> None:
    """R$ 100.00, 2 days late, 3% fine and 1% a day: R$ 105.00 (3.00 + 2.00)."""
    terms = {"multa": _term(2, "3.00"), "juros": _term(2, "1.00")}
    assert amount_due_cents(10000, terms, MONDAY, date(2026, 3, 4)) == 10500


def test_the_specs_cobv_example_early_and_late() -> None:
    """cobBody1: R$ 123.45 due 2020-12-31 (a Thursday), 15% fine, 2% a day, R$ 30.00 off
    until 2020-11-30 (modalities written as strings, as the example does)."""
    terms = {
        "multa": {"modalidade": "2", "valorPerc": "15.00"},
        "juros": {"modalidade": "2", "valorPerc": "2.00"},
        "desconto": {"modalidade": "1", "descontoDataFixa": _dates((date(2020, 11, 30), "30.00"))},
    }
    due = date(2020, 12, 31)
    assert amount_due_cents(12345, terms, due, date(2020, 11, 30)) == 9345
    assert amount_due_cents(12345, terms, due, date(2020, 12, 31)) == 12345
    # 4 days late: fine 18.5175 → 18.52, interest 8% = 9.876 → 9.88.
    assert amount_due_cents(12345, terms, due, date(2021, 1, 4)) == 12345 + 1852 + 988


def test_each_part_rounds_half_up_to_the_centavo() -> None:
    half = {"multa": _term(2, "0.50")}  # 0.5% of R$ 1.00 is exactly half a centavo
    assert amount_due_cents(100, half, MONDAY, MONDAY + timedelta(days=1)) == 101
    assert amount_due_cents(98, half, MONDAY, MONDAY + timedelta(days=1)) == 98  # 0.0049
    # 1% a month on R$ 123.45 for 7 days: 0.28805 → 0.29.
    month = {"juros": _term(3, "1.00")}
    assert amount_due_cents(12345, month, MONDAY, MONDAY + timedelta(days=7)) == 12374


def test_never_below_zero() -> None:
    terms = {"abatimento": _term(1, "60.00"), "desconto": {"modalidade": 3, "valorPerc": "10.00"}}
    assert amount_due_cents(10000, terms, FRIDAY, FRIDAY - timedelta(days=5)) == 0


def test_absent_and_null_terms_change_nothing() -> None:
    assert amount_due_cents(10000, {}, MONDAY, MONDAY + timedelta(days=9)) == 10000
    nulls = {"multa": None, "juros": None, "abatimento": None, "desconto": None}
    assert amount_due_cents(10000, nulls, MONDAY, MONDAY + timedelta(days=9)) == 10000


@pytest.mark.parametrize(
    "terms",
    [
        {"multa": _term(3, "1.00")},
        {"juros": _term(9, "1.00")},
        {"juros": _term(True, "1.00")},
        {"abatimento": _term(1, "ten")},
        {"multa": "15.00"},
        {"desconto": {"modalidade": 1, "descontoDataFixa": []}},
        {"desconto": {"modalidade": 2, "descontoDataFixa": [{"data": "x", "valorPerc": "1.00"}]}},
        {"desconto": {"modalidade": 5}},
    ],
)
def test_unreadable_terms_raise(terms: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"\w"):
        amount_due_cents(10000, terms, MONDAY, MONDAY + timedelta(days=1))


# -- The same as the provider, for any terms and dates --------------------------------


def _money(cents: int) -> str:
    return f"{Decimal(cents).scaleb(-2):.2f}"


@st.composite
def _cobv(draw: st.DrawFn) -> tuple[int, dict[str, Any], date, date]:
    original = draw(st.integers(1, 10**9) | st.integers(1, 10_000))
    due = draw(st.dates(date(2020, 1, 1), date(2031, 12, 31)))
    paid_on = due + timedelta(days=draw(st.integers(-400, 400)))

    def modality(highest: int) -> int | str:
        chosen = draw(st.integers(1, highest))
        return chosen if draw(st.booleans()) else str(chosen)

    def below(percent: bool) -> str:
        # Values the provider accepts: below the original (or 100%).
        return _money(draw(st.integers(0, (10_000 if percent else original) - 1)))

    def any_value() -> str:
        return _money(draw(st.integers(0, 10_000) | st.integers(0, 10**12 - 1)))

    terms: dict[str, Any] = {}
    if draw(st.booleans()):
        terms["multa"] = _term(modality(2), any_value())
    if draw(st.booleans()):
        terms["juros"] = _term(modality(8), any_value())
    if draw(st.booleans()):
        chosen = modality(2)
        terms["abatimento"] = _term(chosen, below(int(chosen) == 2))
    if draw(st.booleans()):
        chosen = modality(6)
        percent = int(chosen) in (2, 5, 6)
        if int(chosen) in (1, 2):
            days = draw(st.lists(st.integers(0, 90), min_size=1, max_size=3, unique=True))
            dates = [(due - timedelta(days=d), below(percent)) for d in days]
            terms["desconto"] = {"modalidade": chosen, "descontoDataFixa": _dates(*dates)}
        else:
            terms["desconto"] = {"modalidade": chosen, "valorPerc": below(percent)}
    return original, terms, due, paid_on


@settings(max_examples=400, deadline=None)
@given(_cobv())
def test_pixrecon_and_the_sandbox_agree_to_the_centavo(
    cobv: tuple[int, dict[str, Any], date, date],
) -> None:
    original_cents, terms, due, paid_on = cobv
    original = Decimal(original_cents).scaleb(-2)
    problems: list[dict[str, str]] = []
    parsed = parse_value_terms(
        {"original": _money(original_cents), **terms}, original, due, problems
    )
    assert problems == []
    provider = amount_due(original, parsed, due, paid_on)
    ours = amount_due_cents(original_cents, terms, due, paid_on)

    assert ours >= 0
    assert ours == int(provider.total * 100)
    assert all(part >= 0 for part in provider.components().values())


# -- The last day it can be paid ------------------------------------------------------


def _payable_until(due: date, validity: int) -> date | None:
    raw = {
        "txid": TXID,
        "status": "ATIVA",
        "calendario": {"dataDeVencimento": due.isoformat(), "validadeAposVencimento": validity},
        "valor": {"original": "100.00"},
    }
    return Charge.model_validate(raw).payable_until()


@pytest.mark.parametrize(
    ("due", "validity", "last_day"),
    [
        # The spec's examples A, F and G (those its holidays do not change).
        (date(2020, 10, 20), 4, date(2020, 10, 26)),
        (date(2021, 8, 27), 5, date(2021, 9, 1)),
        (date(2021, 8, 28), 5, date(2021, 9, 6)),
        (date(2026, 3, 7), 0, date(2026, 3, 9)),  # due on a Saturday
        (date(2026, 3, 8), 0, date(2026, 3, 9)),  # on a Sunday
        (date(2026, 3, 4), 3, date(2026, 3, 9)),  # due Wednesday, the third day a Saturday
        (date(2026, 3, 4), 2, date(2026, 3, 6)),
    ],
)
def test_a_weekend_moves_the_due_date_and_the_last_payable_day_to_monday(
    due: date, validity: int, last_day: date
) -> None:
    assert _payable_until(due, validity) == last_day


def test_pixrecon_and_the_sandbox_agree_on_the_last_payable_day() -> None:
    for due in (MONDAY + timedelta(days=n) for n in range(14)):
        for validity in range(12):
            assert _payable_until(due, validity) == last_payable_day(due, validity), (
                due,
                validity,
            )


# -- Stored as received ---------------------------------------------------------------

TXID = "cobvTermos0000000000000000001"


def _cobv_body(valor: dict[str, Any]) -> dict[str, Any]:
    return {
        "calendario": {
            "criacao": "2026-03-01T10:00:00.000Z",
            "dataDeVencimento": "2026-03-02",
            "validadeAposVencimento": 30,
        },
        "txid": TXID,
        "revisao": 0,
        "status": "ATIVA",
        "valor": valor,
        "chave": DEFAULT_PIX_KEY,
    }


def _process(engine: Engine, *items: NewItem, source: Source = Source.POLL) -> None:
    with session_scope(engine) as session:
        stored = store_items(session, list(items), source=source)
    report = process_items(engine, stored.new_ids)
    assert report.processed == stored.new_ids


def _expected(engine: Engine) -> ExpectedPayment:
    with session_scope(engine) as session:
        row: ExpectedPayment = session.execute(select(ExpectedPayment)).scalar_one()
        return row


def test_a_cobvs_terms_are_stored_as_received(engine: Engine) -> None:
    terms = {
        "multa": {"modalidade": 2, "valorPerc": "2.00"},
        "juros": {"modalidade": "3", "valorPerc": "1.00"},
        "abatimento": {"modalidade": 1, "valorPerc": "5.00"},
        "desconto": {"modalidade": 1, "descontoDataFixa": _dates((MONDAY, "3.00"))},
    }
    _process(engine, charge_item("cobv", _cobv_body({"original": "100.00", **terms})))

    row = _expected(engine)
    assert row.terms is not None
    assert json.loads(row.terms) == terms
    assert row.amount_cents == 10000
    assert row.amount_due_cents is None


def test_a_cobv_without_terms_stores_none(engine: Engine) -> None:
    _process(engine, charge_item("cobv", _cobv_body({"original": "100.00", "multa": None})))
    assert _expected(engine).terms is None


def test_terms_of_an_unexpected_shape_are_kept_not_fatal(engine: Engine) -> None:
    # The shape of the spec's payload-location example: computed values, not terms.
    odd = {"multa": "15.00", "juros": 2, "desconto": [1, 2]}
    _process(engine, charge_item("cobv", _cobv_body({"original": "100.00", **odd})))
    row = _expected(engine)
    assert row.terms is not None
    assert json.loads(row.terms) == {"multa": "15.00", "juros": 2, "desconto": [1, 2]}


def _pix_item(body: dict[str, Any]) -> NewItem:
    return NewItem(kind="pix", key=f"pix:{body['endToEndId']}", payload=dump_json(body))


def _pix_row(engine: Engine) -> PixReceived:
    with session_scope(engine) as session:
        row: PixReceived = session.execute(select(PixReceived)).scalar_one()
        return row


def test_a_pixs_componentes_valor_is_stored_as_received(engine: Engine) -> None:
    components = {
        "original": {"valor": "100.00"},
        "multa": {"valor": "3.00"},
        "juros": {"valor": "2.00"},
    }
    _process(
        engine, _pix_item(pix(valor="105.00", componentesValor=components)), source=Source.WEBHOOK
    )
    row = _pix_row(engine)
    assert row.components is not None
    assert json.loads(row.components) == components
    assert row.amount_cents == 10500


def test_a_pix_without_componentes_valor_stores_none(engine: Engine) -> None:
    _process(engine, _pix_item(pix()))
    assert _pix_row(engine).components is None


def test_componentes_valor_of_an_unexpected_shape_is_kept_not_fatal(engine: Engine) -> None:
    # The spec's own "invalid" example: an array.
    odd = [{"saque": {"valor": "20.00"}}, "junk", Decimal("1.5")]
    _process(engine, _pix_item(pix(componentesValor=odd)))
    row = _pix_row(engine)
    assert row.components is not None
    assert json.loads(row.components) == [{"saque": {"valor": "20.00"}}, "junk", "1.5"]


# -- The amount due of the charges a day's Pix paid -----------------------------------

DAY = date(2026, 3, 4)  # a Wednesday
LATE_TXID = "cobvAtrasada00000000000000001"
EARLY_TXID = "cobvAntecipada000000000000001"
PLAIN_TXID = "cobvSemTermos000000000000001"


def _sandbox_day() -> tuple[SandboxProvider, list[NewItem]]:
    """The provider's own bodies of three cobv paid on DAY (late with a fine and interest,
    early with a discount, one without terms) and of their Pix."""
    clock = FakeClock(datetime(2026, 2, 20, 12, tzinfo=UTC))
    provider = SandboxProvider(seed=3, clock=clock)

    def create(txid: str, due: date, **terms: Any) -> None:
        body = {
            "calendario": {"dataDeVencimento": due.isoformat(), "validadeAposVencimento": 30},
            "devedor": {"cpf": "12345678909", "nome": "Fulano de Tal"},
            "valor": {"original": "200.00", **terms},
            "chave": provider.pix_key,
        }
        provider.create_charge("cobv", txid, body)

    create(
        LATE_TXID,
        date(2026, 2, 27),
        multa={"modalidade": 2, "valorPerc": "2.00"},
        juros={"modalidade": 2, "valorPerc": "0.10"},
    )
    create(
        EARLY_TXID,
        date(2026, 3, 20),
        desconto={"modalidade": 1, "descontoDataFixa": _dates((date(2026, 3, 5), "15.00"))},
    )
    create(PLAIN_TXID, date(2026, 3, 1))
    # 23:00 in São Paulo is already the next day in UTC: the São Paulo date counts.
    clock.now = datetime.combine(DAY, datetime.min.time(), BUSINESS_TZ).replace(hour=23)
    txids = (LATE_TXID, EARLY_TXID, PLAIN_TXID)
    for txid in txids:
        provider.pay_charge(txid)
    items = [charge_item("cobv", provider.charges.get("cobv", txid) or {}) for txid in txids]
    items += [_pix_item(body) for body in provider.all_pix()]
    return provider, items


def test_record_amounts_due_sets_what_a_late_and_an_early_payment_owed(engine: Engine) -> None:
    provider, items = _sandbox_day()
    _process(engine, *items)
    start, end = business_day_bounds(DAY)

    with session_scope(engine) as session:
        assert record_amounts_due(session, start, end) == 2
    with session_scope(engine) as session:
        due = {
            row.txid: row.amount_due_cents
            for row in session.execute(select(ExpectedPayment)).scalars()
        }
        paid = {
            row.txid: row.amount_cents for row in session.execute(select(PixReceived)).scalars()
        }
    # 200.00 + 2% fine (4.00) + 0.10% a day for 5 days (1.00); 200.00 - 15.00.
    assert due == {LATE_TXID: 20500, EARLY_TXID: 18500, PLAIN_TXID: None}
    assert paid == {LATE_TXID: 20500, EARLY_TXID: 18500, PLAIN_TXID: 20000}
    assert provider.charges.due_on(LATE_TXID, DAY).components() == {
        "original": Decimal("200.00"),
        "multa": Decimal("4.00"),
        "juros": Decimal("1.00"),
    }


def test_record_amounts_due_leaves_other_days_and_unconfirmed_pix_alone(engine: Engine) -> None:
    _, items = _sandbox_day()
    _process(engine, *[i for i in items if i.kind != "pix"])
    # The late charge's Pix only notified (pending confirmation): its money does not count.
    late = next(i for i in items if i.kind == "pix" and LATE_TXID in i.payload)
    _process(engine, late, source=Source.WEBHOOK)
    with session_scope(engine) as session:
        assert record_amounts_due(session, *business_day_bounds(DAY)) == 0
        assert record_amounts_due(session, *business_day_bounds(DAY - timedelta(days=1))) == 0


def test_unreadable_terms_leave_the_amount_due_unset(engine: Engine) -> None:
    body = _cobv_body({"original": "100.00", "multa": "15.00"})
    paid = pix(txid=TXID, valor="115.00", horario="2026-03-04T12:00:00.000-03:00")
    _process(engine, charge_item("cobv", body), _pix_item(paid))
    with session_scope(engine) as session:
        assert record_amounts_due(session, *business_day_bounds(DAY)) == 0
    assert _expected(engine).amount_due_cents is None
