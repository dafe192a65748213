"""Case events: who acknowledged or resolved an exception case, when, and with which note

An append-only audit table: triggers refuse UPDATE and DELETE on both SQLite and
PostgreSQL, so a person's action, once recorded, stays as it was recorded.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

REFUSAL = "case_event is append-only: its rows are never updated or deleted"


def upgrade() -> None:
    op.create_table(
        "case_event",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("case_id", sa.BigInteger(), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("actor", sa.String(length=100), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("previous_state", sa.String(length=16), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["case_id"], ["exception_case.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_case_event_case_id"), "case_event", ["case_id"], unique=False)
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            f"""
            CREATE FUNCTION case_event_append_only() RETURNS trigger
            LANGUAGE plpgsql AS $$
            BEGIN
                RAISE EXCEPTION '{REFUSAL}';
            END
            $$
            """
        )
        op.execute(
            """
            CREATE TRIGGER case_event_append_only
            BEFORE UPDATE OR DELETE ON case_event
            FOR EACH ROW EXECUTE FUNCTION case_event_append_only()
            """
        )
        return
    for event in ("UPDATE", "DELETE"):
        op.execute(
            f"""
            CREATE TRIGGER case_event_no_{event.lower()}
            BEFORE {event} ON case_event
            BEGIN
                SELECT RAISE(ABORT, '{REFUSAL}');
            END
            """
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS case_event_append_only ON case_event")
        op.execute("DROP FUNCTION IF EXISTS case_event_append_only()")
    else:
        op.execute("DROP TRIGGER IF EXISTS case_event_no_update")
        op.execute("DROP TRIGGER IF EXISTS case_event_no_delete")
    op.drop_index(op.f("ix_case_event_case_id"), table_name="case_event")
    op.drop_table("case_event")
