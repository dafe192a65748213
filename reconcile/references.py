"""The references a person recognises an exception by: the Pix's ``endToEndId`` and
``txid``, the payer (masked), and what the charge told the payer (``solicitacaoPagador``)
or what the payer wrote (``infoPagador``). A verdict's ``ref`` is whatever identifies its
subject — a refund's ``rtrId``, a payout's idempotency key, a MED case id — which finance
rarely has at hand; the bank statement and the customer's receipt show these instead.

Looked up in bulk, a few queries a subject, because a bad day has tens of thousands of
exceptions."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import date, datetime
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, Row, or_, select
from sqlmodel import Session

from reconcile.actions import COBR_REF, CREDIT_REF, REPEAT_REF, RETURN_REF
from reconcile.db import table_of
from reconcile.denied_claims import first_denied_attempts
from reconcile.masking import mask_document, mask_name, mask_text
from reconcile.models import (
    AccountMovement,
    ExpectedPayment,
    Infraction,
    PixReceived,
    PixRefund,
    RecurringCharge,
    StatementEntry,
)
from reconcile.timeutil import as_utc

REFERENCE_FIELDS = ("txid", "end_to_end_id", "payer_document", "payer_name", "payer_request")
# Well under SQLite's limit on bound parameters, and small enough for PostgreSQL's planner.
CHUNK = 500


def _chunks(values: Iterable[Any]) -> Iterator[list[Any]]:
    unique = sorted({v for v in values if v is not None})
    for start in range(0, len(unique), CHUNK):
        yield unique[start : start + CHUNK]


def _first(values: Sequence[str | None]) -> str | None:
    return next((v for v in values if v), None)


def add_references(
    session: Session, rows: list[dict[str, Any]], entries: Sequence[int | None] | None = None
) -> None:
    """Fill ``REFERENCE_FIELDS`` of each exception row (keys ``subject`` and ``ref``);
    ``entries`` are the statement lines that decided each row's verdict, where known.
    Documents and names are masked, in the free text too: these rows reach terminals,
    files and browsers.

    A chunk at a time: what is looked up for one chunk is let go before the next, so a
    day of tens of thousands of exceptions does not hold every Pix it names at once."""
    known = entries or [None] * len(rows)
    for start in range(0, len(rows), CHUNK):
        _add(session, rows[start : start + CHUNK], known[start : start + CHUNK])


def _add(session: Session, rows: list[dict[str, Any]], entries: Sequence[int | None]) -> None:
    e2e: dict[int, str | None] = {}
    txid: dict[int, str | None] = {}
    for i, row in enumerate(rows):
        subject, ref = row["subject"], row["ref"]
        if subject == "movement" and ":" not in ref:
            # A Pix's endToEndId, or a refund's rtrId (resolved to its Pix below).
            e2e[i] = ref
        elif subject == "movement" and ref.startswith(RETURN_REF):
            # A payout return: its own endToEndId when its ref is one (32 characters);
            # else a payout's key, and the statement line's references tell.
            key = ref.removeprefix(RETURN_REF)
            e2e[i] = key if len(key) == 32 else None
        elif subject == "movement" and ref.startswith(REPEAT_REF):
            # A repeated Pix's key names its endToEndId, a refund's its rtrId (resolved to
            # its Pix below) or its Pix's endToEndId; an accounts key names neither.
            kind, _, rest = ref.removeprefix(REPEAT_REF).partition(":")
            e2e[i] = rest.split(":", 1)[0] if kind in ("pix", "refund") else None
        elif subject == "movement" and ref.startswith(CREDIT_REF):
            # A credit the accounts API notified, by its reference there (looked up below).
            e2e[i] = None
        elif subject == "movement":
            e2e[i] = ref.split(":", 1)[0]
        elif subject == "charge":
            kind, _, key = ref.partition(":")
            txid[i] = key if kind != "invoice" else None
        elif subject == "recurrence" and ref.startswith(COBR_REF):
            # A recurring charge's notification: the charge, and its last attempt's Pix
            # (looked up below). A recurrence's (``rec:``) names no Pix nor charge.
            txid[i] = ref.removeprefix(COBR_REF)
    _from_statement(session, entries, e2e, txid)
    _from_refunds(session, rows, e2e)
    _from_payouts(session, rows, e2e, txid)
    _from_infractions(session, rows, e2e)
    _from_recurring_charges(session, rows, e2e)
    payers = _pix_by(session, e2e, txid)
    for i, pix in payers.items():
        txid[i] = txid.get(i) or _first([p.txid for p in pix])
    charges = _charges_by(session, txid)
    for i, row in enumerate(rows):
        pix = payers.get(i, [])
        charge = charges.get(txid.get(i) or "")
        document = _first([p.payer_document for p in pix]) or (
            charge.debtor_document if charge else None
        )
        name = _first([p.payer_name for p in pix]) or (charge.debtor_name if charge else None)
        row["txid"] = txid.get(i)
        row["end_to_end_id"] = ", ".join(p.end_to_end_id for p in pix) or e2e.get(i)
        row["payer_document"] = mask_document(document) if document else None
        row["payer_name"] = mask_name(name) if name else None
        # Free text a payer or the merchant typed: a CPF in it is as personal as the
        # payer's document field, and every reader of these rows prints them.
        request = (charge.payer_request if charge else None) or _first(
            [p.info_pagador for p in pix]
        )
        row["payer_request"] = mask_text(request) if request else None


def _from_statement(
    session: Session,
    entries: Sequence[int | None],
    e2e: dict[int, str | None],
    txid: dict[int, str | None],
) -> None:
    wanted = dict(enumerate(entries))
    S = table_of(StatementEntry)
    found: dict[int, Row[Any]] = {}
    for ids in _chunks(wanted.values()):
        stmt = select(S.c.id, S.c.end_to_end_id, S.c.original_end_to_end_id, S.c.txid).where(
            S.c.id.in_(ids)
        )
        found.update((entry.id, entry) for entry in session.execute(stmt))
    for i, entry_id in wanted.items():
        entry = found.get(entry_id) if entry_id is not None else None
        if entry is None:
            continue
        e2e[i] = e2e.get(i) or entry.original_end_to_end_id or entry.end_to_end_id
        txid[i] = txid.get(i) or entry.txid


def _from_refunds(session: Session, rows: list[dict[str, Any]], e2e: dict[int, str | None]) -> None:
    """A refund's verdict names its ``rtrId``; the payer is the refunded Pix's."""
    rtr = {i: ref for i, ref in e2e.items() if rows[i]["subject"] == "movement" and ref}
    R = table_of(PixRefund)
    refunded: dict[str, str] = {}
    for ids in _chunks(r for r in rtr.values() if r.startswith("D")):
        stmt = select(R.c.rtr_id, R.c.end_to_end_id).where(R.c.rtr_id.in_(ids))
        refunded.update({r: pix for r, pix in session.execute(stmt)})
    for i, ref in rtr.items():
        if ref in refunded:
            e2e[i] = refunded[ref]


def _from_payouts(
    session: Session,
    rows: list[dict[str, Any]],
    e2e: dict[int, str | None],
    txid: dict[int, str | None],
) -> None:
    """A payout's verdict names its key; a credit the accounts API notified, its
    reference there: the movement tells the Pix (and the charge) behind either."""
    refs = {i: row["ref"] for i, row in enumerate(rows) if row["subject"] == "payout"}
    refs.update(
        (i, row["ref"].removeprefix(CREDIT_REF))
        for i, row in enumerate(rows)
        if row["subject"] == "movement" and row["ref"].startswith(CREDIT_REF)
    )
    M = table_of(AccountMovement)
    found: dict[str, Row[Any]] = {}
    for keys in _chunks(refs.values()):
        stmt = select(M.c.idempotency_key, M.c.reference, M.c.end_to_end_id, M.c.txid).where(
            or_(M.c.idempotency_key.in_(keys), M.c.reference.in_(keys))
        )
        for movement in session.execute(stmt):
            for key in (movement.idempotency_key, movement.reference):
                if key is not None:
                    found.setdefault(key, movement)
    for i, ref in refs.items():
        if ref in found:
            e2e[i] = found[ref].end_to_end_id or e2e.get(i)
            txid[i] = found[ref].txid or txid.get(i)


def _from_infractions(
    session: Session, rows: list[dict[str, Any]], e2e: dict[int, str | None]
) -> None:
    cases = table_of(Infraction)
    refs = {i: row["ref"] for i, row in enumerate(rows) if row["subject"] == "infraction"}
    _pix_named(session, refs, cases.c.infraction_id, cases.c.end_to_end_id, e2e)


def _from_recurring_charges(
    session: Session, rows: list[dict[str, Any]], e2e: dict[int, str | None]
) -> None:
    """A recurring charge's notification names its ``txid``; the Pix is its last debit
    attempt's, as notified (the one the notification is about): on a day the API denied
    one, as that one named it, whatever later notifications of the charge named."""
    refs = {
        i: row["ref"].removeprefix(COBR_REF)
        for i, row in enumerate(rows)
        if row["subject"] == "recurrence" and row["ref"].startswith(COBR_REF)
    }
    days = {i: day for i in refs if (day := _day_of(rows[i])) is not None}
    denied = first_denied_attempts(session, {(refs[i], day) for i, day in days.items()})
    cobrs = table_of(RecurringCharge)
    live = {i: ref for i, ref in refs.items() if (ref, days.get(i)) not in denied}
    _pix_named(session, live, cobrs.c.txid, cobrs.c.last_attempt_end_to_end_id, e2e)
    for i, ref in refs.items():
        if i not in live:
            e2e[i] = denied[(ref, days[i])] or e2e.get(i)


def _day_of(row: dict[str, Any]) -> date | None:
    """The business day a listed exception is of (``date``, as a case row gives it)."""
    day = row.get("date")
    if isinstance(day, date):
        return day
    return date.fromisoformat(day) if isinstance(day, str) else None


def _pix_named(
    session: Session,
    refs: dict[int, str],
    key: ColumnElement[str],
    pix: ColumnElement[str | None],
    e2e: dict[int, str | None],
) -> None:
    """Each row's endToEndId, as the row of ``key`` its ref names holds it in ``pix``
    (when it does; otherwise what the row already had)."""
    named: dict[str, str | None] = {}
    for keys in _chunks(refs.values()):
        named.update({k: p for k, p in session.execute(select(key, pix).where(key.in_(keys)))})
    for i, ref in refs.items():
        e2e[i] = named.get(ref) or e2e.get(i)


class MedTerms(NamedTuple):
    """What the provider states of a MED case that finance acts by: its analysis deadline
    and how much of the disputed amount it has blocked in the account (unknown: None)."""

    deadline_at: datetime | None
    blocked_cents: int | None


def med_terms(session: Session, rows: Iterable[dict[str, Any]]) -> dict[str, MedTerms]:
    """Each MED case's deadline and blocked amount, by case id, for the rows about MED
    cases: what to do about one says by when, and how much is already held."""
    cases = table_of(Infraction)
    ids = [row["ref"] for row in rows if row["subject"] == "infraction"]
    found: dict[str, MedTerms] = {}
    for keys in _chunks(ids):
        stmt = select(cases.c.infraction_id, cases.c.deadline_at, cases.c.blocked_cents).where(
            cases.c.infraction_id.in_(keys)
        )
        found.update(
            {
                case_id: MedTerms(as_utc(when) if when is not None else None, blocked)
                for case_id, when, blocked in session.execute(stmt)
            }
        )
    return found


def med_deadlines(session: Session, rows: Iterable[dict[str, Any]]) -> dict[str, datetime]:
    """Each MED case's analysis deadline, by case id, for the rows about MED cases (those
    the provider states one for)."""
    return {
        case_id: terms.deadline_at
        for case_id, terms in med_terms(session, rows).items()
        if terms.deadline_at is not None
    }


def _pix_by(
    session: Session, e2e: dict[int, str | None], txid: dict[int, str | None]
) -> dict[int, list[Row[Any]]]:
    """The received Pix each row is about: by endToEndId, else every Pix paying its txid
    (a charge paid twice names both)."""
    P = table_of(PixReceived)
    columns = (P.c.end_to_end_id, P.c.txid, P.c.payer_document, P.c.payer_name, P.c.info_pagador)
    by_e2e: dict[str, Row[Any]] = {}
    for ids in _chunks(e2e.values()):
        stmt = select(*columns).where(P.c.end_to_end_id.in_(ids))
        by_e2e.update((p.end_to_end_id, p) for p in session.execute(stmt))
    by_txid: dict[str, list[Row[Any]]] = {}
    for ids in _chunks(t for i, t in txid.items() if not e2e.get(i)):
        stmt = select(*columns).where(P.c.txid.in_(ids)).order_by(P.c.horario, P.c.end_to_end_id)
        for pix in session.execute(stmt):
            by_txid.setdefault(pix.txid or "", []).append(pix)
    found: dict[int, list[Row[Any]]] = {}
    for i in set(e2e) | set(txid):
        ref = e2e.get(i)
        if ref and ref in by_e2e:
            found[i] = [by_e2e[ref]]
        elif not ref and txid.get(i):
            found[i] = by_txid.get(txid[i] or "", [])
    return found


def _charges_by(session: Session, txid: dict[int, str | None]) -> dict[str, Row[Any]]:
    E = table_of(ExpectedPayment)
    found: dict[str, Row[Any]] = {}
    for ids in _chunks(txid.values()):
        stmt = select(E.c.txid, E.c.payer_request, E.c.debtor_document, E.c.debtor_name).where(
            E.c.txid.in_(ids)
        )
        found.update((c.txid, c) for c in session.execute(stmt) if c.txid)
    return found
