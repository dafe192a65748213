"""Items a provider's listing sent that could not be read: remembered, so that every run
of the days they may belong to knows those days were not read whole (docs/design.md §5).

A listing read over a window (a periodic poll's, or ``reconcile``'s fetch of a day) that
skips an item keeps it in ``unread_item``; the next read of the same listing over its time
that walks to the end forgets it, and keeps it again if it still cannot be read. Its time
is the item's own when that much can be read; else the whole window it was listed in, and
only a read over all of that window forgets it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Engine, and_, delete, or_, select
from sqlmodel import Session, col

from reconcile.db import session_scope
from reconcile.models import UnreadItem
from reconcile.payloads import PayloadInvalid, violations
from reconcile.payloads.tolerant import read_timestamp
from reconcile.timeutil import as_utc, utcnow

# How many of a listing's unread items a reason names one by one (the rest are counted).
NAMED = 5


@dataclass(frozen=True)
class Listing:
    """A listing whose items a day's verdict depends on, and how its items are named."""

    one: str
    many: str
    sent_by: str
    key: str
    """The field that identifies an item (never personal data)."""
    time: str | None = None
    """The field that says when an item happened, if it gives its day: a charge or a
    case concerns days other than the one it was created on, so its window stands."""
    statement: bool = False
    """Booked up to the date lag after midnight, a line may be the day before's."""


LISTINGS: Mapping[str, Listing] = {
    "statement": Listing(
        "statement line",
        "statement lines",
        "the accounts API sent",
        "id",
        "createdAt",
        statement=True,
    ),
    "pix": Listing(
        "Pix received", "Pix received", "the QR code API listed (GET /pix)", "endToEndId", "horario"
    ),
    "cob": Listing("charge (cob)", "charges (cob)", "the QR code API listed (GET /cob)", "txid"),
    "cobv": Listing(
        "charge (cobv)", "charges (cobv)", "the QR code API listed (GET /cobv)", "txid"
    ),
    "cobr": Listing(
        "recurring charge (cobr)",
        "recurring charges (cobr)",
        "the QR code API listed (GET /cobr)",
        "txid",
    ),
    "rec": Listing(
        "recurrence (rec)", "recurrences (rec)", "the QR code API listed (GET /rec)", "idRec"
    ),
    "infraction": Listing("MED infraction", "MED infractions", "the accounts API listed", "id"),
}


@dataclass(frozen=True)
class Skipped:
    key: str | None
    reason: str
    at: datetime | None


def skipped(listing: str, raw: Mapping[str, Any], exc: Exception) -> Skipped:
    """What can be said of an item ``listing`` sent that could not be read: its id and
    time if readable, where and why it failed — never the values, which may be personal."""
    shape = LISTINGS[listing]
    key = raw.get(shape.key)
    named = str(key) if isinstance(key, str | int) and not isinstance(key, bool) else ""
    at = read_timestamp(raw.get(shape.time)) if shape.time else None
    return Skipped(named[:100] or None, _reason(exc), at)


def _reason(exc: Exception) -> str:
    found: list[dict[str, str]] | None = None
    if isinstance(exc, ValidationError):
        found = violations(exc)
    elif isinstance(exc, PayloadInvalid):
        if not exc.violations:
            return exc.detail
        found = exc.violations
    if not found:
        return "not as documented"
    return "; ".join(f"{v['property']}: {v['message']}" for v in found)


def remember(
    engine: Engine, listing: str, start: datetime, end: datetime, found: list[Skipped]
) -> None:
    """After a read of ``listing`` over [start, end] walked to its end: what an earlier read
    could not read in that window is forgotten (read whole now, or kept again below), and
    each item this one skipped is kept."""
    start, end = as_utc(start), as_utc(end)
    now = utcnow()
    with session_scope(engine) as session:
        session.execute(
            delete(UnreadItem).where(
                col(UnreadItem.listing) == listing,
                col(UnreadItem.at_from) >= start,
                col(UnreadItem.at_until) <= end,
            )
        )
        session.add_all(
            UnreadItem(
                listing=listing,
                item_key=one.key,
                reason=one.reason,
                at_from=as_utc(one.at) if one.at else start,
                at_until=as_utc(one.at) if one.at else end,
                seen_at=now,
            )
            for one in found
        )


def unread_on(
    session: Session, day: date, start: datetime, end: datetime, statement_end: datetime
) -> list[str]:
    """Per listing, the items still unread that may belong to ``day``, [start, end) (a
    statement line up to ``statement_end``): the day was not read whole, in words."""
    listing, at_from = col(UnreadItem.listing), col(UnreadItem.at_from)
    rows = session.execute(
        select(UnreadItem.listing, UnreadItem.item_key, UnreadItem.reason)  # type: ignore[call-overload]
        .where(
            col(UnreadItem.at_until) >= start,
            or_(
                and_(listing == "statement", at_from < statement_end),
                and_(listing != "statement", at_from < end),
            ),
        )
        .order_by(col(UnreadItem.listing), col(UnreadItem.id))
    ).all()
    by_listing: dict[str, list[tuple[str | None, str]]] = {}
    for name, key, reason in rows:
        by_listing.setdefault(name, []).append((key, reason))
    return [_in_words(name, found, day) for name, found in by_listing.items()]


def _in_words(listing: str, found: list[tuple[str | None, str]], day: date) -> str:
    shape = LISTINGS.get(listing, Listing(listing, f"{listing} items", "the provider sent", ""))
    what = f"1 {shape.one}" if len(found) == 1 else f"{len(found)} {shape.many}"
    named = [f"{key or 'without a readable id'} ({reason})" for key, reason in found[:NAMED]]
    more = f", and {len(found) - NAMED} more" if len(found) > NAMED else ""
    whole = "the statement" if shape.statement else "the listing"
    return (
        f"{what} {shape.sent_by} could not be read (logged as poll_invalid_item): "
        f"{', '.join(named)}{more}; {whole} was not read whole for the day, and what it left "
        "out is in no total — ask the provider what it is, then run `pixrecon reconcile "
        f"--date {day.isoformat()}` (without --no-poll): a read that reads it whole clears this"
    )
