"""A MED case's closing is confirmed by the API

A notification saying a case closed with a debit counted as the provider's word, and a
poll of the same case in the same status was a repeat of that notification, never read:
a forged "closed, debited" counted as money the API stood behind. ``infraction`` now
keeps whether the API confirmed the closing (``confirmation``) and the debit it states
(``confirmed_debited_cents``) beside the notified one. Cases stored closed before this
revision stay as they were judged: a past day re-run after the upgrade must read the
money it read before, and a case asked again only once the workers' confirm job runs would
meanwhile read as a possible forgery. A case read from the API (polled, or looked up for
its Pix) was the API's word, its debit counted there (``confirmed``); one only notified
counted in the day's verdicts but not as the API's (``not_required``, as when look-ups are
off). Closings notified from this revision on are asked.

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
        "UPDATE infraction SET confirmation = 'confirmed', "
        "confirmed_debited_cents = debited_cents "
        "WHERE upper(status) NOT IN ('OPEN', 'ACKNOWLEDGED', 'UNKNOWN_TO_PROVIDER') AND ("
        "end_to_end_id IS NOT NULL OR inbox_item_id IN "
        "(SELECT id FROM inbox_item WHERE poll_count > 0))"
    )
    op.execute(
        "UPDATE infraction SET confirmation = 'not_required' "
        "WHERE upper(status) NOT IN ('OPEN', 'ACKNOWLEDGED', 'UNKNOWN_TO_PROVIDER') "
        "AND confirmation IS NULL"
    )


def downgrade() -> None:
    with op.batch_alter_table("infraction") as batch:
        batch.drop_column("confirmed_debited_cents")
        batch.drop_column("confirmation")
