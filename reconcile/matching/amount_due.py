"""What a due-date charge (``cobv``) costs on the day it is paid.

The BCB Pix API (``CobVValor``) gives a ``cobv`` its ``valor.original`` and, optionally, a
fine (``multa``) and interest (``juros``) for paying after the due date, an abatement
(``abatimento``) that always applies, and a discount (``desconto``) for paying early. A
payer's PSP charges what they make due on the payment date, and the Pix then carries the
breakdown in ``componentesValor``; reconciliation has to judge that Pix against the same
amount, not against the original.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date, datetime
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Any, Final

from sqlalchemy import func, select
from sqlmodel import Session

from reconcile import actions
from reconcile.db import table_of
from reconcile.formats import brl
from reconcile.logs import get_logger
from reconcile.matching.context import RunContext
from reconcile.models import Confirmation, ExpectedPayment, PixReceived, ReconciliationItem
from reconcile.money import CENT, InvalidAmount, parse_amount
from reconcile.timeutil import BUSINESS_TZ, as_utc, next_weekday

log = get_logger(__name__)

# The Pix that pay a charge: as the charges matcher counts them (one the API knows with
# another amount pays too, by the amount it states).
COUNTED: Final = Confirmation.stated()
HUNDRED: Final = Decimal(100)
# Day counts for rates per month and per year: the commercial month (30 days) and year
# (360 days) for calendar days, and Brazil's 252 business days a year (21 a month).
# A due-date charge's verdict is keyed ``cobv:<ref>``; ``;`` sorts right after ``:``.
COBV_PREFIX: Final = "cobv:"
COBV_PREFIX_END: Final = "cobv;"
CHUNK: Final = 500
CALENDAR_MONTH: Final = 30
CALENDAR_YEAR: Final = 360
BUSINESS_MONTH: Final = 21
BUSINESS_YEAR: Final = 252
# Enough digits that every product is exact and every quotient rounds correctly.
PRECISION: Final = 60


def amount_due_cents(
    original_cents: int, terms: Mapping[str, Any], due_date: date, paid_on: date
) -> int:
    """Centavos due on ``paid_on`` for a ``cobv`` of ``original_cents`` due on ``due_date``
    with ``terms`` (its ``valor`` objects ``multa``, ``juros``, ``abatimento``,
    ``desconto``, as the BCB API writes them; missing or null ones do not apply).

    ``original + multa + juros - abatimento - desconto``, never below zero, where:

    - **Due date.** A due date on a Saturday or Sunday moves to the next Monday, and the
      fine, interest and discounts follow it (the spec's *prorrogação*). Business days are
      Monday to Friday: there is no holiday calendar (the sandbox has none either).
    - **Late** means paid after that (moved) due date. Calendar days late count from it;
      business days late are the weekdays after it up to and including the payment date.
    - **multa** (late only): 1 a fixed value; 2 a percentage of the original.
    - **juros** (late only), simple interest on the original: 1 a value per calendar day;
      2 a percentage per calendar day; 3 a percentage per month of 30 calendar days;
      4 a percentage per year of 360 calendar days; 5 to 8 the same per business day,
      per month of 21 business days and per year of 252 business days.
    - **abatimento** (always): 1 a fixed value; 2 a percentage of the original.
    - **desconto**: 1 a fixed value and 2 a percentage of the original, each "until" the
      dates of ``descontoDataFixa`` (up to three ``{data, valorPerc}``; a date on a
      weekend moves to the next Monday; the entry in force is the one with the earliest
      date on or after the payment date, the largest if two share it); 3 a value and 5 a
      percentage per calendar day paid before the due date; 4 and 6 the same per
      business day (the weekdays after the payment date up to and including the due
      date).

    Percentages are of ``valor.original``, as in the spec's own ``componentesValor``
    example. Arithmetic is exact (``Decimal``); each component is rounded once, at the end
    of its own computation, to the centavo with ROUND_HALF_UP (half a centavo rounds up,
    as banks round), so the components a Pix reports add up to its ``valor``. When the
    abatement and discount exceed the rest, nothing is due (zero).

    Raises ``ValueError`` when a term cannot be read (an unknown modality, a value that is
    not an amount).
    """
    if original_cents < 0:
        raise ValueError("the original amount is negative")
    original = Decimal(original_cents).scaleb(-2)
    due = next_weekday(due_date)
    with localcontext() as ctx:
        ctx.prec = PRECISION
        total = (
            original
            + _fine(original, terms.get("multa"), due, paid_on)
            + _interest(original, terms.get("juros"), due, paid_on)
            - _abatement(original, terms.get("abatimento"))
            - _discount(original, terms.get("desconto"), due, paid_on)
        )
    return max(0, int(total * 100))


def _weekdays_between(after: date, through: date) -> int:
    """Weekdays ``d`` with ``after < d <= through``."""
    if through <= after:
        return 0
    weeks, rest = divmod((through - after).days, 7)
    first = after.weekday() + 1
    return weeks * 5 + sum(1 for i in range(rest) if (first + i) % 7 < 5)


def _cents(amount: Decimal) -> Decimal:
    # Rounding of every component: to the centavo, ROUND_HALF_UP.
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def _term(raw: object, name: str) -> Mapping[str, Any] | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ValueError(f"{name} is not an object")
    return raw


def _modality(term: Mapping[str, Any], name: str, highest: int) -> int:
    raw = term.get("modalidade")
    # The spec's schema says integer; its own example writes "2".
    if isinstance(raw, str) and raw.strip().isdigit():
        raw = int(raw)
    if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= highest:
        raise ValueError(f"{name}.modalidade must be 1 to {highest}")
    return raw


def _value(raw: object, name: str) -> Decimal:
    try:
        value = parse_amount(raw)
    except InvalidAmount as exc:
        raise ValueError(f"{name}: {exc}") from None
    if value < 0:
        raise ValueError(f"{name} is negative")
    return value


def _valued(raw: object, name: str, highest: int) -> tuple[int, Decimal] | None:
    """A term with a single ``valorPerc``: its modality and value, ``None`` when absent."""
    term = _term(raw, name)
    if term is None:
        return None
    return _modality(term, name, highest), _value(term.get("valorPerc"), f"{name}.valorPerc")


def _reais_or_percent(modality: int, value: Decimal, original: Decimal) -> Decimal:
    """Modality 1 states reais; the other one a percentage of ``valor.original``."""
    return _cents(value if modality == 1 else original * value / HUNDRED)


def _fine(original: Decimal, raw: object, due: date, paid_on: date) -> Decimal:
    fine = _valued(raw, "multa", 2)
    if fine is None or paid_on <= due:
        return Decimal(0)
    return _reais_or_percent(*fine, original)


def _interest(original: Decimal, raw: object, due: date, paid_on: date) -> Decimal:
    interest = _valued(raw, "juros", 8)
    if interest is None or paid_on <= due:
        return Decimal(0)
    modality, value = interest
    days = (paid_on - due).days if modality <= 4 else _weekdays_between(due, paid_on)
    per_value, divisor = {
        1: (True, 1),
        2: (False, 1),
        3: (False, CALENDAR_MONTH),
        4: (False, CALENDAR_YEAR),
        5: (True, 1),
        6: (False, 1),
        7: (False, BUSINESS_MONTH),
        8: (False, BUSINESS_YEAR),
    }[modality]
    if per_value:
        return _cents(value * days)
    return _cents(original * value * days / (HUNDRED * divisor))


def _abatement(original: Decimal, raw: object) -> Decimal:
    abatement = _valued(raw, "abatimento", 2)
    return Decimal(0) if abatement is None else _reais_or_percent(*abatement, original)


def _discount(original: Decimal, raw: object, due: date, paid_on: date) -> Decimal:
    term = _term(raw, "desconto")
    if term is None:
        return Decimal(0)
    modality = _modality(term, "desconto", 6)
    if modality in (1, 2):
        value = _fixed_date_discount(term.get("descontoDataFixa"), paid_on)
        if value is None:
            return Decimal(0)
        return _reais_or_percent(modality, value, original)
    value = _value(term.get("valorPerc"), "desconto.valorPerc")
    calendar = modality in (3, 5)
    days = max(0, (due - paid_on).days) if calendar else _weekdays_between(paid_on, due)
    if modality in (3, 4):
        return _cents(value * days)
    return _cents(original * value * days / HUNDRED)


def _fixed_date_discount(raw: object, paid_on: date) -> Decimal | None:
    """The ``valorPerc`` of the entry in force on ``paid_on``, if any."""
    if not isinstance(raw, list) or not raw:
        raise ValueError("desconto.descontoDataFixa must be a non-empty list")
    in_force: list[tuple[date, Decimal]] = []
    for entry in raw:
        if not isinstance(entry, Mapping):
            raise ValueError("desconto.descontoDataFixa has an entry that is not an object")
        text = entry.get("data")
        try:
            until = date.fromisoformat(text) if isinstance(text, str) else None
        except ValueError:
            until = None
        if until is None:
            raise ValueError("desconto.descontoDataFixa has an entry without a valid data")
        value = _value(entry.get("valorPerc"), "desconto.descontoDataFixa.valorPerc")
        until = next_weekday(until)
        if paid_on <= until:
            in_force.append((until, value))
    if not in_force:
        return None
    earliest = min(until for until, _ in in_force)
    return max(value for until, value in in_force if until == earliest)


def record_amounts_due(session: Session, start: datetime, end: datetime) -> int:
    """Set ``amount_due_cents`` of every ``cobv`` with terms that a counted Pix (confirmed,
    needing no confirmation, or known to the API with another amount) paid within
    ``[start, end)`` (by ``horario``, else the time it was recorded): the amount due on
    the São Paulo date of the first counted Pix with its txid, which is the payment that
    settled it. Returns how many it set; a charge whose terms cannot be read keeps
    ``amount_due_cents`` null (it is then judged against its original amount) and is
    logged."""
    E, P = table_of(ExpectedPayment), table_of(PixReceived)
    when = func.coalesce(P.c.horario, P.c.created_at)
    paid_in_window = select(P.c.txid).where(
        P.c.txid.is_not(None), P.c.confirmation.in_(COUNTED), when >= start, when < end
    )
    rows = session.execute(
        select(
            E.c.id,
            E.c.ref,
            E.c.amount_cents,
            E.c.terms,
            E.c.due_date,
            P.c.horario,
            P.c.created_at,
        )
        .join(P, P.c.txid == E.c.txid)
        .where(
            E.c.kind == "cobv",
            E.c.terms.is_not(None),
            E.c.due_date.is_not(None),
            P.c.confirmation.in_(COUNTED),
            E.c.txid.in_(paid_in_window),
        )
    ).all()
    first_paid: dict[int, datetime] = {}
    charges: dict[int, tuple[str, int, str, date]] = {}
    for row in rows:
        paid_at = as_utc(row.horario if row.horario is not None else row.created_at)
        if row.id not in first_paid or paid_at < first_paid[row.id]:
            first_paid[row.id] = paid_at
        charges[row.id] = (row.ref, row.amount_cents, row.terms, row.due_date)
    recorded = 0
    for charge_id, (ref, original_cents, raw_terms, due_date) in sorted(charges.items()):
        paid_on = first_paid[charge_id].astimezone(BUSINESS_TZ).date()
        try:
            terms = json.loads(raw_terms)
            if not isinstance(terms, Mapping):
                raise ValueError("the terms are not a JSON object")
            cents = amount_due_cents(original_cents, terms, due_date, paid_on)
        except ValueError as exc:
            log.warning("cobv_terms_unreadable", ref=ref, reason=str(exc))
            continue
        session.execute(E.update().where(E.c.id == charge_id).values(amount_due_cents=cents))
        recorded += 1
    return recorded


def stated_due_cents(raw_components: str | None) -> int | None:
    """What the payer's PSP says was due, from a Pix's ``componentesValor``: original plus
    fine and interest, less abatement and discount. ``None`` when absent or unreadable."""
    try:
        components = json.loads(raw_components) if raw_components else None
    except ValueError:
        return None
    if not isinstance(components, Mapping) or not isinstance(components.get("original"), Mapping):
        return None
    signs = {"original": 1, "multa": 1, "juros": 1, "abatimento": -1, "desconto": -1}
    total = Decimal(0)
    try:
        for name, sign in signs.items():
            part = components.get(name)
            if isinstance(part, Mapping) and part.get("valor") is not None:
                total += sign * parse_amount(part["valor"])
    except InvalidAmount:
        return None
    return int(total * 100)


def flag_disagreeing_components(session: Session, ctx: RunContext) -> None:
    """A due-date charge the Pix's own breakdown (``componentesValor``) says owed another
    amount than its terms give: judged against the terms, and raised to a person."""
    items, E, P = table_of(ReconciliationItem), table_of(ExpectedPayment), table_of(PixReceived)
    # The run's due-date charges first, by a range of the unique index, then their terms
    # by key. One join of the three let the planner, with statistics from before this run's
    # rows existed, probe every cobv charge once per verdict: 36 s on a million-Pix day.
    judged = {
        ref.removeprefix(COBV_PREFIX): (item_id, reason)
        for item_id, ref, reason in session.execute(
            select(items.c.id, items.c.ref, items.c.reason).where(
                items.c.run_id == ctx.run_id,
                items.c.subject == "charge",
                items.c.ref >= COBV_PREFIX,
                items.c.ref < COBV_PREFIX_END,
            )
        )
    }
    refs = sorted(judged)
    for start in range(0, len(refs), CHUNK):
        rows = session.execute(
            select(E.c.ref, E.c.amount_due_cents, P.c.components)
            .join(P, P.c.txid == E.c.txid)
            .where(
                E.c.kind == "cobv",
                E.c.ref.in_(refs[start : start + CHUNK]),
                E.c.amount_due_cents.is_not(None),
                P.c.components.is_not(None),
                P.c.confirmation.in_(COUNTED),
                # The Pix that paid it by the day's end: a later one is its own day's.
                func.coalesce(P.c.horario, P.c.created_at) < ctx.end,
            )
        ).all()
        for ref, due, raw in rows:
            stated = stated_due_cents(raw)
            if stated is None or stated == due:
                continue
            item_id, reason = judged[ref]
            session.execute(
                items.update()
                .where(items.c.id == item_id)
                .values(
                    exception=True,
                    priority=2,
                    reason=f"{reason}; {actions.ITEMISED_OTHERWISE} {brl(stated)} as due "
                    f"(its componentesValor), the charge's terms give {brl(due)}",
                )
            )
