"""periodic jobs named for what they do

The job ``poll_pix`` polls the whole QR code API (Pix and charges) and ``confirm_pix``
confirms account movements too: renamed ``poll_qrcode`` and ``confirm``, keeping their
polling windows so no poll starts over from the initial look-back.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

RENAMED = (("poll_pix", "poll_qrcode"), ("confirm_pix", "confirm"))


def _rename(pairs: Sequence[tuple[str, str]]) -> None:
    for old, new in pairs:
        op.execute(
            sa.text(
                "UPDATE scheduled_job SET name = :new WHERE name = :old "
                "AND NOT EXISTS (SELECT 1 FROM scheduled_job WHERE name = :new)"
            ).bindparams(old=old, new=new)
        )


def upgrade() -> None:
    _rename(RENAMED)


def downgrade() -> None:
    _rename([(new, old) for old, new in RENAMED])
