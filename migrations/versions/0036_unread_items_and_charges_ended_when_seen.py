"""Items a listing could not read are remembered; a charge keeps when it was seen ended

``unread_item``: an item a provider's listing sent that could not be read (a statement
line, a Pix received, a charge…) was skipped and logged, and only the ``reconcile`` run
that fetched it knew: the workers' run of today and a ``--no-poll`` run judged the day
as if it had been read whole. Each is now kept, with where and why it could not be read
and when it happened as far as known, until a later read over its time reads it whole.

``expected_payment.ended_seen_at`` and ``open_seen_at``: a charge removed, expired,
rejected or cancelled says no time for it (the BCB's charge carries none), and its stored
status is its latest: a charge open at its day's end and removed the next day read as
expired when its day was re-run. For an ended status received in place of an open one,
when each was received is kept: one seen open before the day ended and ended only after
was open at that end, and the day judges it so. Both are receipt times, so a day loaded
later than it happened (every state received after it) is judged as the states stand.
Rows stored before this revision have neither: they are judged as they stand, as before.

Revision ID: 0036
Revises: 0035
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision: str = "0036"
down_revision: str | None = "0035"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CHARGE_COLUMNS = ("ended_seen_at", "open_seen_at")


def upgrade() -> None:
    op.create_table(
        "unread_item",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("listing", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("item_key", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("at_from", sa.DateTime(timezone=True), nullable=False),
        sa.Column("at_until", sa.DateTime(timezone=True), nullable=False),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_unread_item_at_from", "unread_item", ["at_from"])
    for name in CHARGE_COLUMNS:
        op.add_column(
            "expected_payment", sa.Column(name, sa.DateTime(timezone=True), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("expected_payment") as batch:
        for name in CHARGE_COLUMNS:
            batch.drop_column(name)
    op.drop_index("ix_unread_item_at_from", table_name="unread_item")
    op.drop_table("unread_item")
