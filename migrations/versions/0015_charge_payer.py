"""What a charge told its payer, and who the payer is; cases by subject and reference

An exception about a charge names what finance recognises: the charge's
``solicitacaoPagador`` and its ``devedor`` (shown masked), kept with the expected payment.
A case's lifecycle looks for the same subject and reference on earlier days: an index.

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
    op.create_index(
        "ix_exception_case_subject_ref",
        "exception_case",
        ["subject", "ref", "business_date"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_exception_case_subject_ref", table_name="exception_case")
    with op.batch_alter_table("expected_payment", schema=None) as batch_op:
        batch_op.drop_column("debtor_name")
        batch_op.drop_column("debtor_document")
        batch_op.drop_column("payer_request")
