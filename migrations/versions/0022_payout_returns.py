"""Payout returns, each on the day it happened

A payout's notification lists its returns (``refunds[]``), and the payout's row kept only
their sum. The day a return happened was lost: a payout returned days later was counted
as returned on the payout's own day (whose answer then changed when re-run) and on no day
its statement credit was booked. Each return is now a row of its own, read by the day it
happened (``returned_at``).

The returns of payouts stored before this revision are read from the notification each
payout's row came from. A payout whose notification retention has already emptied has no
return rows; the engine keeps judging it by the sum on its row, as before.

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-26
"""

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "payout_return",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("rank", sa.BigInteger(), nullable=False),
        sa.Column("inbox_item_id", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("payout_key", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("ref", sqlmodel.sql.sqltypes.AutoString(length=120), nullable=False),
        sa.Column("end_to_end_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True),
        sa.Column("amount_cents", sa.BigInteger(), nullable=True),
        sa.Column("returned_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["inbox_item_id"], ["inbox_item.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("ref", name="uq_payout_return"),
    )
    op.create_index("ix_payout_return_inbox_item_id", "payout_return", ["inbox_item_id"])
    op.create_index("ix_payout_return_payout_key", "payout_return", ["payout_key"])
    op.create_index("ix_payout_return_returned_at", "payout_return", ["returned_at"])
    _backfill()


def downgrade() -> None:
    op.drop_index("ix_payout_return_returned_at", table_name="payout_return")
    op.drop_index("ix_payout_return_payout_key", table_name="payout_return")
    op.drop_index("ix_payout_return_inbox_item_id", table_name="payout_return")
    op.drop_table("payout_return")


def _cents(raw: object) -> int | None:
    try:
        amount = Decimal(str(raw))
    except (InvalidOperation, ValueError):
        return None
    return int((amount * 100).to_integral_value()) if amount.is_finite() else None


def _moment(raw: object, fallback: datetime) -> datetime:
    if isinstance(raw, str):
        try:
            parsed = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            return fallback
        if parsed.tzinfo is not None:
            return parsed.astimezone(UTC)
    return fallback


def _text(raw: object, longest: int) -> str | None:
    return raw if isinstance(raw, str) and 0 < len(raw) <= longest else None


def _backfill() -> None:
    """Each return listed by the notifications the payouts' rows came from, once: dated by
    its ``createdAt``, else by when the first notification listing it arrived."""
    rows = (
        op.get_bind()
        .execute(
            sa.text(
                "SELECT m.idempotency_key, m.reference, m.inbox_item_id, i.payload, i.received_at "
                "FROM account_movement AS m JOIN inbox_item AS i ON i.id = m.inbox_item_id "
                "WHERE m.refunded_cents > 0 AND (m.type IN ('TRANSFER', 'CASHOUT') "
                "OR (m.type = 'REFUND' AND m.idempotency_key IS NOT NULL)) "
                "ORDER BY i.received_at, m.id"
            ).columns(received_at=sa.DateTime(timezone=True))
        )
        .all()
    )
    kept: dict[str, dict[str, Any]] = {}
    for key, reference, item_id, payload, received_at in rows:
        try:
            document = json.loads(payload)
        except (TypeError, ValueError):
            continue
        if not isinstance(document, dict):
            continue
        data = document.get("data") or document.get("payload")
        refunds = data.get("refunds") if isinstance(data, dict) else None
        if not isinstance(refunds, list):
            continue
        payout = key or reference
        heard = received_at if isinstance(received_at, datetime) else datetime.now(UTC)
        heard = heard if heard.tzinfo is not None else heard.replace(tzinfo=UTC)
        for n, refund in enumerate(refunds, start=1):
            if not isinstance(refund, dict):
                continue
            e2e = _text(refund.get("endToEndId"), 64)
            ref = e2e or f"{payout}#{n}"
            status = _text(refund.get("status"), 32)
            amount = _cents(refund.get("pixRefundAmount"))
            if ref in kept:
                # A later notification: its status and amount, the first one's day.
                kept[ref].update(status=status, amount_cents=amount)
                continue
            kept[ref] = {
                "payout_key": payout,
                "ref": ref,
                "end_to_end_id": e2e,
                "status": status,
                "amount_cents": amount,
                "returned_at": _moment(refund.get("createdAt"), heard),
                "rank": 0,
                "inbox_item_id": item_id,
                "updated_at": datetime.now(UTC),
            }
    if kept:
        columns = ("payout_key", "ref", "end_to_end_id", "status", "amount_cents")
        table = sa.table(
            "payout_return",
            *(sa.column(name) for name in columns),
            sa.column("returned_at", sa.DateTime(timezone=True)),
            sa.column("updated_at", sa.DateTime(timezone=True)),
            sa.column("rank"),
            sa.column("inbox_item_id"),
        )
        op.bulk_insert(table, list(kept.values()))
