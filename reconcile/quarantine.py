"""Refused deliveries, kept for forensics in a bounded table."""

from __future__ import annotations

import json
from collections.abc import Mapping

from sqlalchemy import delete, func, select
from sqlmodel import Session, col

from reconcile.models import QuarantinedDelivery


def quarantine(
    session: Session,
    *,
    route: str,
    remote_addr: str | None,
    status_code: int,
    reason: str,
    detail: str,
    headers: Mapping[str, str],
    body: bytes | None,
    body_size: int | None,
    max_rows: int,
) -> None:
    session.add(
        QuarantinedDelivery(
            route=route[:200],
            remote_addr=remote_addr,
            status_code=status_code,
            reason=reason[:64],
            detail=detail,
            headers=json.dumps(dict(headers), ensure_ascii=False),
            body=body,
            body_size=body_size,
        )
    )
    session.flush()
    newest = session.execute(select(func.max(QuarantinedDelivery.id))).scalar_one()
    # Ids grow monotonically, so "keep the newest N" is a range delete on the key.
    session.execute(
        delete(QuarantinedDelivery).where(col(QuarantinedDelivery.id) <= newest - max_rows)
    )
