"""expected payments and reconciliation runs

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "exception_case",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("business_date", sa.Date(), nullable=False),
        sa.Column("subject", sa.String(length=16), nullable=False),
        sa.Column("ref", sa.String(length=120), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("first_seen_run_id", sa.BigInteger(), nullable=False),
        sa.Column("last_seen_run_id", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("business_date", "subject", "ref", "status", name="uq_exception_case"),
    )
    with op.batch_alter_table("exception_case", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_exception_case_business_date"), ["business_date"], unique=False
        )

    op.create_table(
        "reconciliation_run",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("business_date", sa.Date(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("report", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("reconciliation_run", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_reconciliation_run_business_date"), ["business_date"], unique=False
        )

    op.create_table(
        "reconciliation_item",
        sa.Column("subject", sa.String(length=16), nullable=False),
        sa.Column("ref", sa.String(length=120), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("exception", sa.Boolean(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("expected_cents", sa.BigInteger(), nullable=True),
        sa.Column("actual_cents", sa.BigInteger(), nullable=True),
        sa.Column("source", sa.String(length=16), nullable=True),
        sa.Column("inbox_item_id", sa.BigInteger(), nullable=True),
        sa.Column("statement_entry_id", sa.BigInteger(), nullable=True),
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("run_id", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["reconciliation_run.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id", "subject", "ref", name="uq_reconciliation_item"),
    )
    with op.batch_alter_table("reconciliation_item", schema=None) as batch_op:
        batch_op.create_index(
            "ix_reconciliation_item_run_exception", ["run_id", "exception"], unique=False
        )

    op.create_table(
        "expected_payment",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("rank", sa.BigInteger(), nullable=False),
        sa.Column("inbox_item_id", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("ref", sa.String(length=100), nullable=False),
        sa.Column("amount_cents", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(length=40), nullable=False),
        sa.Column("txid", sa.String(length=35), nullable=True),
        sa.Column("created_at_provider", sa.DateTime(timezone=True), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("due_date", sa.Date(), nullable=True),
        sa.Column("payable_until", sa.Date(), nullable=True),
        sa.ForeignKeyConstraint(
            ["inbox_item_id"],
            ["inbox_item.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("kind", "ref", name="uq_expected_payment"),
    )
    with op.batch_alter_table("expected_payment", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_expected_payment_txid"), ["txid"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("expected_payment", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_expected_payment_txid"))

    op.drop_table("expected_payment")
    with op.batch_alter_table("reconciliation_item", schema=None) as batch_op:
        batch_op.drop_index("ix_reconciliation_item_run_exception")

    op.drop_table("reconciliation_item")
    with op.batch_alter_table("reconciliation_run", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_reconciliation_run_business_date"))

    op.drop_table("reconciliation_run")
    with op.batch_alter_table("exception_case", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_exception_case_business_date"))

    op.drop_table("exception_case")
