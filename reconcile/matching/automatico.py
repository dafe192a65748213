"""Pix Automático: a recurring charge (``cobr``) is collected by debit attempts. A rejected
attempt is news a person must act on — unless the charge's retry policy still allows
attempts, in which case it is pending until its last retry window closes.

Runs after the charges matcher, over the few recurring charges it judged unpaid or
expired; their retry policy and attempts are the ``terms`` stored with each charge."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlmodel import Session

from reconcile.db import table_of
from reconcile.matching.context import RunContext
from reconcile.models import ExpectedPayment, ReconciliationItem
from reconcile.timeutil import business_day_bounds

# The BCB's retry policies: attempts allowed in all, and the days after the due date
# within which retries may happen.
POLICIES: dict[str, tuple[int, int]] = {"NAO_PERMITE": (1, 0), "PERMITE_3R_7D": (4, 7)}
FAILED = ("REJEITADA", "NAO_REALIZADA")


def _terms(raw: str | None) -> dict[str, Any]:
    try:
        found = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _day_end(day: date) -> datetime:
    return business_day_bounds(day)[1]


def judge_recurring_charges(session: Session, ctx: RunContext) -> None:
    items, charges = table_of(ReconciliationItem), table_of(ExpectedPayment)
    rows = session.execute(
        select(items.c.id, charges.c.status, charges.c.due_date, charges.c.terms)
        .join(charges, (charges.c.kind == "cobr") & (items.c.ref == "cobr:" + charges.c.ref))
        .where(
            items.c.run_id == ctx.run_id,
            items.c.subject == "charge",
            items.c.status.in_(("unpaid", "expired")),
        )
    ).all()
    for item_id, status, due_date, raw_terms in rows:
        terms = _terms(raw_terms)
        attempts = [a for a in terms.get("tentativas") or [] if isinstance(a, dict)]
        failed = [a for a in attempts if a.get("status") in FAILED]
        if not failed and status not in FAILED:
            continue
        code = terms.get("rejeicao") or next(
            (a.get("codigo") for a in reversed(failed) if a.get("codigo")), None
        )
        why = f"the payer's bank rejected the debit ({code or 'no code given'})"
        allowed, window_days = POLICIES.get(str(terms.get("politicaRetentativa")), (1, 0))
        last_window = (due_date or ctx.day) + timedelta(days=window_days)
        retry = status not in FAILED and len(attempts) < allowed and ctx.today <= last_window
        values: dict[str, Any]
        if retry:
            values = {
                "status": "pending",
                "exception": False,
                "priority": None,
                "due_at": _day_end(last_window),
                "reason": f"{why}; the retry policy allows {allowed - len(attempts)} more "
                f"attempt(s) until {last_window.strftime('%d/%m/%Y')}",
            }
        else:
            values = {
                "status": "unpaid",
                "exception": True,
                "priority": 2,
                "reason": f"{why}, and no attempt is left: ask the payer to pay otherwise",
            }
        session.execute(update(items).where(items.c.id == item_id).values(**values))
