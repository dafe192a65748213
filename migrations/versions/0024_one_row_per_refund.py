"""One row per refund

A refund was keyed by the Pix it refunds and the merchant's ``id``, the SPI's ``rtrId``
standing in when a notification left the ``id`` out. One refund notified first by its
``rtrId`` alone (still processing) and later with both ids (settled) became two rows,
which the nightly run judged under the same ref and stopped on. The workers now keep one
row per refund, found by either id.

Rows stored before this revision that share their Pix and ``rtrId`` are merged here: the
row of the most advanced status (then of a settled confirmation, then the latest) stays,
with the merchant's id for its key and whatever detail only another row knew; the others
go. Rows each known by one id only are not told to be one refund: nothing stored says
so, and the next sighting with both ids ties them. Written here rather than imported, so
that this revision reads the same whatever the code becomes.

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-26
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Untyped: each value goes back as the driver gave it (SQLite's times are text).
refund = sa.table(
    "pix_refund",
    *(
        sa.column(name)
        for name in (
            "id",
            "end_to_end_id",
            "refund_id",
            "rtr_id",
            "amount_cents",
            "natureza",
            "motivo",
            "requested_at",
            "settled_at",
            "status",
            "rank",
            "confirmation",
            "updated_at",
        )
    ),
)
DETAILS = ("amount_cents", "natureza", "motivo", "requested_at", "settled_at")
BATCH = 500


def _lead(row: Any) -> tuple[Any, ...]:
    return (row.rank, row.confirmation != "pending", row.updated_at, row.id)


def _merge(rows: list[Any]) -> tuple[int, dict[str, Any], list[int]]:
    """(the row that stays, its new values, the rows that go)."""
    ordered = sorted(rows, key=_lead, reverse=True)
    lead = ordered[0]
    merchant = [row.refund_id for row in ordered if row.refund_id != row.rtr_id]
    values = {"refund_id": merchant[0] if merchant else lead.refund_id}
    for name in DETAILS:
        values[name] = next(
            (getattr(row, name) for row in ordered if getattr(row, name) is not None), None
        )
    return lead.id, values, [row.id for row in ordered[1:]]


def upgrade() -> None:
    bind = op.get_bind()
    twice = bind.execute(
        sa.select(refund.c.end_to_end_id, refund.c.rtr_id)
        .where(refund.c.rtr_id.is_not(None))
        .group_by(refund.c.end_to_end_id, refund.c.rtr_id)
        .having(sa.func.count() > 1)
    ).all()
    for start in range(0, len(twice), BATCH):
        keys = {(e2e, rtr) for e2e, rtr in twice[start : start + BATCH]}
        rows = bind.execute(
            sa.select(refund).where(refund.c.end_to_end_id.in_(sorted({e2e for e2e, _ in keys})))
        ).all()
        groups: dict[tuple[str, str], list[Any]] = {}
        for row in rows:
            if (row.end_to_end_id, row.rtr_id) in keys:
                groups.setdefault((row.end_to_end_id, row.rtr_id), []).append(row)
        for group in groups.values():
            kept, values, gone = _merge(group)
            # The rows that go first: the one that stays may take the key of one of them.
            bind.execute(refund.delete().where(refund.c.id.in_(gone)))
            bind.execute(refund.update().where(refund.c.id == kept).values(values))


def downgrade() -> None:
    # The merged rows cannot be told apart again, and one row per refund is what the
    # earlier revision meant to keep anyway.
    pass
