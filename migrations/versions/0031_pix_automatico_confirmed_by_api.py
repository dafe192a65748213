"""Pix Automático notifications confirmed by the API

A recurrence or a recurring charge notified by webhook was taken at its word: a forged
"cancelled" hid a missed cycle. Like every other notification, its state now counts once
the provider's API stands behind it: ``recurrence`` and ``recurring_charge`` gain the
confirmation columns, and ``confirmed_status`` and ``confirmed_status_at``, the status the
API last stated and when it took it. Rows stored before this revision stay as they were
judged (``confirmed``, their status as the API's): a past day re-run after the upgrade
must read the cycles it read before, and a row asked again only once the workers' confirm
job runs would meanwhile read as a possible forgery. Notifications from this revision on
are looked up.

Revision ID: 0031
Revises: 0030
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0031"
down_revision: str | None = "0030"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("recurrence", "recurring_charge")


def upgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(
                sa.Column(
                    "confirmation", sa.String(length=24), nullable=False, server_default="pending"
                )
            )
            batch_op.add_column(sa.Column("confirmed_amount_cents", sa.BigInteger(), nullable=True))
            batch_op.add_column(
                sa.Column("confirmed_at", sa.DateTime(timezone=True), nullable=True)
            )
            batch_op.add_column(
                sa.Column("next_check_at", sa.DateTime(timezone=True), nullable=True)
            )
            batch_op.add_column(
                sa.Column("check_attempts", sa.Integer(), nullable=False, server_default="0")
            )
            batch_op.add_column(sa.Column("confirmed_status", sa.String(length=32), nullable=True))
            batch_op.add_column(
                sa.Column("confirmed_status_at", sa.DateTime(timezone=True), nullable=True)
            )
            batch_op.create_index(
                batch_op.f(f"ix_{table}_confirmation"), ["confirmation"], unique=False
            )
        op.execute(
            f"UPDATE {table} SET confirmation = 'confirmed', confirmed_status = status, "  # noqa: S608
            "confirmed_status_at = status_at, confirmed_at = updated_at"
        )


def downgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_index(batch_op.f(f"ix_{table}_confirmation"))
            for column in (
                "confirmed_status_at",
                "confirmed_status",
                "check_attempts",
                "next_check_at",
                "confirmed_at",
                "confirmed_amount_cents",
                "confirmation",
            ):
                batch_op.drop_column(column)
