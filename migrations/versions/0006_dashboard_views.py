"""dashboard views

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

VIEWS = (
    "v_webhook_latency",
    "v_payout_outcomes",
    "v_charge_outcomes",
    "v_open_exceptions",
    "v_daily_summary",
    "v_latest_run",
)


def _seconds(later: str, earlier: str) -> str:
    # Time arithmetic is the one thing the two dialects spell differently.
    if op.get_bind().dialect.name == "postgresql":
        return f"EXTRACT(EPOCH FROM ({later} - {earlier}))"
    return f"((julianday({later}) - julianday({earlier})) * 86400.0)"


def _day(column: str) -> str:
    if op.get_bind().dialect.name == "postgresql":
        return f"(({column}) AT TIME ZONE 'UTC')::date"
    return f"date({column})"


def upgrade() -> None:
    op.execute(
        """
        CREATE VIEW v_latest_run AS
        SELECT business_date, MAX(id) AS run_id
        FROM reconciliation_run
        WHERE status = 'completed'
        GROUP BY business_date
        """
    )
    op.execute(
        """
        CREATE VIEW v_daily_summary AS
        SELECT r.business_date, i.subject, i.status,
               COUNT(*) AS items,
               SUM(CASE WHEN i.exception THEN 1 ELSE 0 END) AS exceptions,
               SUM(COALESCE(i.expected_cents, 0)) AS expected_cents,
               SUM(COALESCE(i.actual_cents, 0)) AS actual_cents
        FROM v_latest_run r
        JOIN reconciliation_item i ON i.run_id = r.run_id
        GROUP BY r.business_date, i.subject, i.status
        """
    )
    op.execute(
        """
        CREATE VIEW v_open_exceptions AS
        SELECT c.id AS case_id, c.business_date, c.subject, c.ref, c.status, c.state,
               c.note, i.reason, i.expected_cents, i.actual_cents, c.updated_at
        FROM exception_case c
        LEFT JOIN v_latest_run r ON r.business_date = c.business_date
        LEFT JOIN reconciliation_item i
               ON i.run_id = r.run_id AND i.subject = c.subject
              AND i.ref = c.ref AND i.status = c.status
        WHERE c.state IN ('open', 'acknowledged')
        """
    )
    for name, subject in (("v_charge_outcomes", "charge"), ("v_payout_outcomes", "payout")):
        op.execute(
            f"""
            CREATE VIEW {name} AS
            SELECT r.business_date, i.ref, i.status, i.exception, i.reason,
                   i.expected_cents, i.actual_cents
            FROM v_latest_run r
            JOIN reconciliation_item i ON i.run_id = r.run_id
            WHERE i.subject = '{subject}'
            """  # noqa: S608 (constants, not input)
        )
    notified = _seconds("b.webhook_at", "p.horario")
    processed = _seconds("b.processed_at", "b.webhook_at")
    op.execute(
        f"""
        CREATE VIEW v_webhook_latency AS
        SELECT {_day("b.webhook_at")} AS day_utc,
               COUNT(*) AS notified_pix,
               AVG({notified}) AS avg_notification_seconds,
               MAX({notified}) AS max_notification_seconds,
               AVG({processed}) AS avg_processing_seconds,
               MAX({processed}) AS max_processing_seconds
        FROM pix_received p
        JOIN inbox_item b ON b.id = p.inbox_item_id
        WHERE b.webhook_at IS NOT NULL AND p.horario IS NOT NULL
        GROUP BY {_day("b.webhook_at")}
        """  # noqa: S608 (constants, not input)
    )


def downgrade() -> None:
    for name in VIEWS:
        op.execute(f"DROP VIEW IF EXISTS {name}")
