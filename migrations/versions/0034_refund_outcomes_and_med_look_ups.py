"""A refund's outcome as the provider's API states it; MED closings' look-ups back off

A refund notified as made that the API lists in another final state is
``status_mismatch``, but what the API stated was not kept, so its exception could only
say "another outcome". ``pix_refund.confirmed_status`` keeps it from now on; rows stored
before this revision have none, and their exceptions read as before.

A MED case's closing was looked up at every pass, a failing look-up as often as any, in
one batch a pass: the cases behind a batch of failing ones waited forever.
``infraction.next_check_at`` and ``check_attempts`` space each case's look-ups out, as
every other confirmed row's are; existing rows have none and are due at once.

Revision ID: 0034
Revises: 0033
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0034"
down_revision: str | None = "0033"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("pix_refund", sa.Column("confirmed_status", sa.String(length=32), nullable=True))
    with op.batch_alter_table("infraction") as batch:
        batch.add_column(sa.Column("next_check_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(
            sa.Column("check_attempts", sa.Integer(), nullable=False, server_default="0")
        )


def downgrade() -> None:
    with op.batch_alter_table("infraction") as batch:
        batch.drop_column("check_attempts")
        batch.drop_column("next_check_at")
    with op.batch_alter_table("pix_refund") as batch:
        batch.drop_column("confirmed_status")
