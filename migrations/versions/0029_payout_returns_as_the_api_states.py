"""A payout return's amount as the provider's API states it

A return's amount was whatever the latest notification listing it said, and it counted
with the confirmation of its payout's latest state, which the API gives for the payout's
status, not for each return's amount: a notification stating a return larger than it
was counted the larger amount as the API's. ``payout_return.confirmed_amount_cents`` keeps
what the API states each return was, once a look-up or a poll of its payout lists it (0
for a return it lists as not made); rows stored before this revision have none and count
as before.

Revision ID: 0029
Revises: 0028
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0029"
down_revision: str | None = "0028"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "payout_return", sa.Column("confirmed_amount_cents", sa.BigInteger(), nullable=True)
    )


def downgrade() -> None:
    with op.batch_alter_table("payout_return") as batch:
        batch.drop_column("confirmed_amount_cents")
