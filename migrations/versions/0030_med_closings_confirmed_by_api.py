"""A MED case's closing is confirmed by the API

A notification saying a case closed with a debit counted as the provider's word, and a
poll of the same case in the same status was a repeat of that notification, never read:
a forged "closed, debited" counted as money the API stood behind. ``infraction`` now
keeps whether the API confirmed the closing (``confirmation``) and the debit it states
(``confirmed_debited_cents``) beside the notified one. Cases stored closed before this
revision are asked again (``pending``): their debit counts once the API states it —
but for those a poll brought first, whose row is the API's own word.

Revision ID: 0030
Revises: 0029
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision: str = "0030"
down_revision: str | None = "0029"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "infraction",
        sa.Column("confirmation", sqlmodel.sql.sqltypes.AutoString(length=24), nullable=True),
    )
    op.add_column(
        "infraction", sa.Column("confirmed_debited_cents", sa.BigInteger(), nullable=True)
    )
    op.execute(
        "UPDATE infraction SET confirmation = 'pending' "
        "WHERE upper(status) NOT IN ('OPEN', 'ACKNOWLEDGED', 'UNKNOWN_TO_PROVIDER')"
    )
    # First seen by a poll: what the row holds is what the API said, as a poll stored
    # after this revision is confirmed on arrival. A past day re-run before the confirm
    # job has asked again then reads the same debit as before the upgrade.
    op.execute(
        "UPDATE infraction SET confirmation = 'confirmed', "
        "confirmed_debited_cents = debited_cents "
        "WHERE confirmation = 'pending' AND inbox_item_id IN "
        "(SELECT id FROM inbox_item WHERE source = 'poll')"
    )


def downgrade() -> None:
    with op.batch_alter_table("infraction") as batch:
        batch.drop_column("confirmed_debited_cents")
        batch.drop_column("confirmation")
