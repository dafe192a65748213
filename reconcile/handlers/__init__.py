"""One handler per inbox item kind: payload in, keyed domain rows out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session

from reconcile.handlers.accounts import handle_cashout, handle_infraction, handle_movement
from reconcile.handlers.automatico import handle_cobr, handle_rec
from reconcile.handlers.charges import handle_charge
from reconcile.handlers.common import PermanentItemError, insert_ignore_many
from reconcile.handlers.pix import handle_pix, handle_pix_refund, pix_row, refund_row, write_refunds
from reconcile.handlers.statement import handle_balance, handle_statement
from reconcile.models import InboxItem, ItemKind, PixReceived

Handler = Callable[[Session, InboxItem], None]

HANDLERS: dict[str, Handler] = {
    ItemKind.PIX.value: handle_pix,
    ItemKind.PIX_REFUND.value: handle_pix_refund,
    ItemKind.REC.value: handle_rec,
    ItemKind.COBR.value: handle_cobr,
    ItemKind.ACCOUNTS_TRANSFER.value: handle_movement,
    ItemKind.ACCOUNTS_RECEIVE.value: handle_movement,
    ItemKind.ACCOUNTS_REFUND.value: handle_movement,
    ItemKind.ACCOUNTS_CASHOUT.value: handle_cashout,
    ItemKind.ACCOUNTS_INFRACTION.value: handle_infraction,
    ItemKind.ACCOUNTS_STATEMENT.value: handle_statement,
    ItemKind.ACCOUNTS_BALANCE.value: handle_balance,
    ItemKind.CHARGE.value: handle_charge,
}


@dataclass(frozen=True)
class BatchHandler:
    """A kind whose items become rows of one table, so that a batch of them is written
    with one statement: ``row`` reads an item (``PermanentItemError`` when it cannot),
    ``write`` stores the rows of a whole batch."""

    row: Callable[[InboxItem], dict[str, Any]]
    write: Callable[[Session, Sequence[dict[str, Any]]], None]


# The kinds that arrive by the thousand; every other kind goes item by item (``HANDLERS``),
# and so does a batch whose statement failed, to find the item that failed it.
BATCH_HANDLERS: dict[str, BatchHandler] = {
    ItemKind.PIX.value: BatchHandler(
        pix_row, lambda session, rows: insert_ignore_many(session, PixReceived, rows)
    ),
    ItemKind.PIX_REFUND.value: BatchHandler(refund_row, write_refunds),
}

__all__ = ["BATCH_HANDLERS", "HANDLERS", "BatchHandler", "Handler", "PermanentItemError"]
