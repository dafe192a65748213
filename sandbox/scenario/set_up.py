"""What the merchant set up before payers act: charges, recurrences, recurring charges."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sandbox.automatico_webhooks import NotificationKind, notification
from sandbox.scenario.drafts import ChargeDraft
from sandbox.scenario.model import Cob, Cobv, Recurrence, RecurringCharge, Step

if TYPE_CHECKING:
    from sandbox.scenario.book import DayBook


def apply_set_up(
    book: DayBook, step: Step, item: Cob | Cobv | Recurrence | RecurringCharge, when: datetime
) -> None:
    provider = book.provider
    if isinstance(item, Recurrence):
        rec = provider.create_recurrence(
            item.amount,
            contract=item.contract,
            periodicity=item.periodicity,
            retry_policy=item.retry_policy,
            at=when,
        )
        # The payer approves at once: the approval is what the provider notifies.
        rec = provider.update_recurrence(rec["idRec"], "APROVADA", at=when)
        book.refs[item.ref] = str(rec["idRec"])
        book.notify("rec", notification(NotificationKind.REC, rec), step)
        return
    if isinstance(item, RecurringCharge):
        due = book.day + timedelta(days=item.due_in_days)
        cobr = provider.create_recurring_charge(
            book.refs[item.recurrence], item.amount, due, txid=item.txid, at=when
        )
        draft = ChargeDraft(item.ref, "cobr", str(cobr["txid"]), item.amount)
    else:
        debtor: dict[str, Any] = {"debtor_cpf": item.debtor_cpf, "debtor_cnpj": item.debtor_cnpj}
        if item.debtor_name is not None:
            debtor["debtor_name"] = item.debtor_name
        if isinstance(item, Cob):
            charge = provider.create_cob(
                item.amount, txid=item.txid, expiracao=item.expires_in, **debtor
            )
            expires = when + timedelta(seconds=item.expires_in)
            draft = ChargeDraft(item.ref, "cob", str(charge["txid"]), item.amount, expires)
        else:
            charge = provider.create_cobv(
                item.amount,
                book.day + timedelta(days=item.due_in_days),
                txid=item.txid,
                validade_apos_vencimento=item.validity_days,
                **debtor,
            )
            draft = ChargeDraft(item.ref, "cobv", str(charge["txid"]), item.amount)
    book.charges[item.ref] = draft
    book.refs[item.ref] = draft.txid
