"""What a charge told its payer, and who the payer is

An exception about a charge names what finance recognises: the charge's
``solicitacaoPagador`` and its ``devedor`` (shown masked), kept with the expected payment.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("expected_payment", schema=None) as batch_op:
        batch_op.add_column(sa.Column("payer_request", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("debtor_document", sa.String(length=14), nullable=True))
        batch_op.add_column(sa.Column("debtor_name", sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("expected_payment", schema=None) as batch_op:
        batch_op.drop_column("debtor_name")
        batch_op.drop_column("debtor_document")
        batch_op.drop_column("payer_request")
