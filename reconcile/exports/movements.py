"""The day's reconciled verdicts: every ``reconciliation_item`` row of its latest completed
run (a movement, charge, payout, MED case or statement line each), and for a Pix received
its ``txid`` and payer, masked; for a notification repeated with other money
(``repeat:{inbox key}``), those of the Pix the repeat repeats, as the exceptions list gives them.

``key`` is ``{subject}:{ref}``. A ``ref`` is already a global id of its subject (a Pix's
endToEndId, a refund's rtrId, ``cob:{txid}``, a payout's idempotency key, a MED case id, a
statement line's id), so the key names the thing, not the run: the same on every run and
export of the day, and on the next day's export too when a movement is carried across
midnight (it is one movement: import it once).

Rows come sorted by ``subject``, then ``ref``: the same order on every export and re-run
of the day. Read in chunks of ``CHUNK`` rows by that key, each in a short transaction: a
day of a million verdicts streams without holding a lock or a list. If the day is
reconciled again meanwhile (the newer run replaces these verdicts), the export stops with
``RunReplaced``."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import date
from typing import Any

from sqlalchemy import Engine, Select, and_, func, select, tuple_
from sqlmodel import Session

from reconcile.actions import REPEAT_REF
from reconcile.db import session_scope, table_of
from reconcile.exports.cells import masked
from reconcile.exports.runs import DayRun, latest_completed_run
from reconcile.exports.table import CHUNK, Row, RunReplaced, Table
from reconcile.models import PixReceived, ReconciliationItem, StatementEntry
from reconcile.references import add_references

MOVEMENT_COLUMNS = (
    "key",
    "date",
    "subject",
    "ref",
    "status",
    "exception",
    "reason",
    "expected_cents",
    "actual_cents",
    "net_cents",
    "source",
    "carried",
    "refund_by",
    "txid",
    "payer_document",
    "payer_name",
)
_FROM_ITEM = MOVEMENT_COLUMNS[2:-3]


def _chunk(run_id: int, after: tuple[str, str] | None) -> Select[Any]:
    items, pix, lines = (
        table_of(ReconciliationItem),
        table_of(PixReceived),
        table_of(StatementEntry),
    )
    # A Pix received: its ref is its endToEndId (a refund's is an rtrId, or "e2e:id").
    received = and_(
        items.c.subject == "movement", items.c.ref.like("E%"), items.c.ref.not_like("%:%")
    )
    return (
        select(
            *(items.c[name] for name in _FROM_ITEM),
            # Known only from the statement (never notified nor polled): its line's txid.
            func.coalesce(pix.c.txid, lines.c.txid).label("txid"),
            pix.c.payer_document,
            pix.c.payer_name,
        )
        .select_from(
            items.outerjoin(pix, and_(received, pix.c.end_to_end_id == items.c.ref)).outerjoin(
                lines, and_(received, lines.c.id == items.c.statement_entry_id)
            )
        )
        .where(
            items.c.run_id == run_id,
            *([tuple_(items.c.subject, items.c.ref) > after] if after is not None else []),
        )
        # By key, not by row id: on PostgreSQL the largest matcher writes its rows from two
        # connections at once (reconcile.matching.parallel), so the ids of a re-run come in
        # another order; the keys, and so the file, do not.
        .order_by(items.c.subject, items.c.ref)
        .limit(CHUNK)
    )


def _rows(engine: Engine, run: DayRun) -> Iterator[Row]:
    after: tuple[str, str] | None = None
    emitted = 0
    while True:
        with session_scope(engine) as session:
            chunk = session.execute(_chunk(run.run_id, after)).all()
            repeated = _repeated(session, chunk)
        for found in chunk:
            values = found._mapping
            named = repeated.get(found.ref, values)
            row: Row = {
                "key": f"{found.subject}:{found.ref}",
                "date": run.day,
                **{name: values[name] for name in _FROM_ITEM},
                "txid": named["txid"],
            }
            row["reason"] = masked("reason", found.reason)
            row["payer_document"] = masked("payer_document", named["payer_document"])
            row["payer_name"] = masked("payer_name", named["payer_name"])
            yield row
        emitted += len(chunk)
        if len(chunk) < CHUNK:
            break
        after = (chunk[-1].subject, chunk[-1].ref)
    if emitted != run.items:
        raise RunReplaced(run.day.isoformat())


def _repeated(session: Session, chunk: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """A repeat's row names the movement it repeats only in its ref: the ``txid`` and
    payer a person looks it up by are that movement's (the few repeats of a chunk, looked
    up as every exceptions list looks them up)."""
    rows = [
        {"subject": found.subject, "ref": found.ref}
        for found in chunk
        if found.subject == "movement" and found.ref.startswith(REPEAT_REF)
    ]
    if not rows:
        return {}
    add_references(session, rows)
    return {row["ref"]: row for row in rows}


def movement_table(engine: Engine, day: date) -> Table:
    """``NotReconciled`` when the day has no completed run (raised here, before any row)."""
    run = latest_completed_run(engine, day, count_items=True)
    return Table(
        name=f"movements-{day.isoformat()}",
        columns=MOVEMENT_COLUMNS,
        rows=_rows(engine, run),
        notice=run.notice(),
    )
