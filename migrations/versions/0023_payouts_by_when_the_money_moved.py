"""Payouts on the day their money moved

A payout belonged to the day it was created (its ``createdAt``). A scheduled Pix is
created days before it is initiated, and the statement debits it when it is: re-run
after it was paid, its creation day judged it paid out and never debited, and the day of
the debit had no payout to match the line to. Its endToEndId says when it was initiated
(``E`` + ISPB + ``yyyyMMddHHmm`` in UTC + 11 characters): ``moved_at`` keeps that time when
it is later than the creation, and the engine dates the payout by it.

Payouts stored before this revision are dated the same way, from the endToEndId each
row keeps. The parsing is repeated here rather than imported, so that this revision
reads the same whatever the code becomes.

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-26
"""

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

E2E_TIME = re.compile(r"^E[0-9]{8}([0-9]{12})[a-zA-Z0-9]{11}$")
LONGEST_SCHEDULE = timedelta(days=366)
BATCH = 5_000


def _moved_later(created: datetime | None, e2e: str | None) -> datetime | None:
    found = E2E_TIME.match(e2e or "")
    if found is None:
        return None
    try:
        initiated = datetime.strptime(found.group(1), "%Y%m%d%H%M").replace(tzinfo=UTC)
    except ValueError:
        return None
    if created is None:
        return initiated
    if created.tzinfo is None:  # SQLite gives naive UTC back
        created = created.replace(tzinfo=UTC)
    if created.replace(second=0, microsecond=0) < initiated <= created + LONGEST_SCHEDULE:
        return initiated
    return None


def upgrade() -> None:
    op.add_column(
        "account_movement", sa.Column("moved_at", sa.DateTime(timezone=True), nullable=True)
    )
    movement = sa.table(
        "account_movement",
        sa.column("id", sa.BigInteger),
        sa.column("end_to_end_id", sa.String),
        sa.column("provider_created_at", sa.DateTime(timezone=True)),
        sa.column("moved_at", sa.DateTime(timezone=True)),
    )
    bind = op.get_bind()
    last = 0
    while True:
        rows = bind.execute(
            sa.select(movement.c.id, movement.c.end_to_end_id, movement.c.provider_created_at)
            .where(movement.c.id > last, movement.c.end_to_end_id.like("E%"))
            .order_by(movement.c.id)
            .limit(BATCH)
        ).all()
        if not rows:
            return
        last = rows[-1].id
        moved = [
            {"row_id": row.id, "moved": when}
            for row in rows
            if (when := _moved_later(row.provider_created_at, row.end_to_end_id)) is not None
        ]
        if moved:
            bind.execute(
                movement.update()
                .where(movement.c.id == sa.bindparam("row_id"))
                .values(moved_at=sa.bindparam("moved")),
                moved,
            )


def downgrade() -> None:
    with op.batch_alter_table("account_movement") as batch:
        batch.drop_column("moved_at")
