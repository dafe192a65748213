"""One handler per inbox item kind: payload in, keyed domain rows out."""

from __future__ import annotations

from collections.abc import Callable

from sqlmodel import Session

from reconcile.handlers.accounts import handle_cashout, handle_infraction, handle_movement
from reconcile.handlers.automatico import handle_cobr, handle_rec
from reconcile.handlers.charges import handle_charge
from reconcile.handlers.common import PermanentItemError
from reconcile.handlers.pix import handle_pix, handle_pix_refund
from reconcile.handlers.statement import handle_balance, handle_statement
from reconcile.models import InboxItem, ItemKind

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

__all__ = ["HANDLERS", "Handler", "PermanentItemError"]
