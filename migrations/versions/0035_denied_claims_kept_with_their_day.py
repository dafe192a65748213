"""Pix Automático notifications the API denied are kept with their day

A recurrence or recurring charge notified in a state the provider's API denies is the
exception of the day the notification is about, read from the ``recurrence`` or
``recurring_charge`` row. That row keeps only the latest state: a later genuine
notification of the same object overwrote the denied one, and the day, asked again, no
longer showed its exception. ``denied_claim`` keeps each denied notification as it was
when the API denied it, with the instant that makes its day (``claimed_at``).

The rows denied before this revision are copied in as they stand, so that a past day
re-run after the upgrade reads the exceptions it read before.

Revision ID: 0035
Revises: 0034
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision: str = "0035"
down_revision: str | None = "0034"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DENIED = "('status_mismatch', 'unconfirmed_webhook', 'unverifiable')"
# The day a notification is about: the time it gives its state, never later than it
# arrived (as ``reconcile/matching/automatico.py`` reads it).
CLAIMED_AT = (
    "CASE WHEN r.status_at IS NULL OR r.status_at > i.received_at THEN i.received_at "
    "ELSE r.status_at END"
)


def upgrade() -> None:
    op.create_table(
        "denied_claim",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("kind", sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
        sa.Column("key", sqlmodel.sql.sqltypes.AutoString(length=35), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("attempt_status", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True),
        sa.Column(
            "attempt_end_to_end_id", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True
        ),
        sa.Column("confirmation", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
        sa.Column("confirmed_status", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True),
        sa.Column("amount_cents", sa.BigInteger(), nullable=True),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("denied_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("inbox_item_id", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["inbox_item_id"], ["inbox_item.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("kind", "key", "inbox_item_id", name="uq_denied_claim"),
    )
    op.create_index("ix_denied_claim_claimed_at", "denied_claim", ["claimed_at"])
    op.create_index("ix_denied_claim_inbox_item_id", "denied_claim", ["inbox_item_id"])
    columns = (
        "kind, key, status, attempt_status, attempt_end_to_end_id, confirmation, "
        "confirmed_status, amount_cents, claimed_at, denied_at, inbox_item_id"
    )
    op.execute(
        f"INSERT INTO denied_claim ({columns}) "  # noqa: S608
        "SELECT 'rec', r.id_rec, r.status, NULL, NULL, r.confirmation, r.confirmed_status, "
        f"r.amount_cents, {CLAIMED_AT}, coalesce(r.confirmed_at, r.updated_at), "
        "r.inbox_item_id FROM recurrence r JOIN inbox_item i ON i.id = r.inbox_item_id "
        f"WHERE r.confirmation IN {DENIED}"
    )
    op.execute(
        f"INSERT INTO denied_claim ({columns}) "  # noqa: S608
        "SELECT 'cobr', r.txid, r.status, r.last_attempt_status, "
        "r.last_attempt_end_to_end_id, r.confirmation, r.confirmed_status, "
        "(SELECT e.amount_cents FROM expected_payment e WHERE e.kind = 'cobr' "
        f"AND e.ref = r.txid), {CLAIMED_AT}, coalesce(r.confirmed_at, r.updated_at), "
        "r.inbox_item_id FROM recurring_charge r JOIN inbox_item i ON i.id = r.inbox_item_id "
        f"WHERE r.confirmation IN {DENIED}"
    )


def downgrade() -> None:
    op.drop_index("ix_denied_claim_inbox_item_id", table_name="denied_claim")
    op.drop_index("ix_denied_claim_claimed_at", table_name="denied_claim")
    op.drop_table("denied_claim")
