"""What the merchant set up before payers act: charges, recurrences, recurring charges."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sandbox.automatico_webhooks import NotificationKind, notification
from sandbox.charge_payloads import parse_cobv
from sandbox.defaults import DEFAULT_PAYER_NAME
from sandbox.ids import new_cpf, new_txid
from sandbox.ledger import format_amount
from sandbox.qrcode_operations import person
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
            start=item.start_date(book.day),
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
    elif isinstance(item, Cob):
        debtor: dict[str, Any] = {"debtor_cpf": item.debtor_cpf, "debtor_cnpj": item.debtor_cnpj}
        if item.debtor_name is not None:
            debtor["debtor_name"] = item.debtor_name
        charge = provider.create_cob(
            item.amount, txid=item.txid, expiracao=item.expires_in, **debtor
        )
        expires = when + timedelta(seconds=item.expires_in)
        draft = ChargeDraft(item.ref, "cob", str(charge["txid"]), item.amount, expires)
    else:
        txid = _create_cobv(book, item)
        expires = provider.charges.expires_at(txid)
        draft = ChargeDraft(item.ref, "cobv", txid, item.amount, expires)
    book.charges[item.ref] = draft
    book.refs[item.ref] = draft.txid


def _create_cobv(book: DayBook, item: Cobv) -> str:
    """``PUT /cobv`` as ``SandboxProvider.create_cobv`` makes it, with the fine, interest,
    abatement and discount of the scenario. A due date before the day stands for an
    invoice issued earlier and now past due: the API refuses such a date at creation, so
    the body is checked as of the due date. Returns the txid."""
    provider = book.provider
    due = item.due_date(book.day)
    cpf = item.debtor_cpf
    if cpf is None and item.debtor_cnpj is None:
        cpf = new_cpf(provider.rng)  # a due-date charge names its debtor
    body = {
        "calendario": {
            "dataDeVencimento": due.isoformat(),
            "validadeAposVencimento": item.validity_days,
        },
        "devedor": person(cpf, item.debtor_cnpj, item.debtor_name or DEFAULT_PAYER_NAME),
        "valor": {
            "original": format_amount(item.amount),
            **item.value_terms(book.day).render(),
        },
        "chave": provider.pix_key,
    }
    terms = parse_cobv(body, {provider.pix_key}, min(book.day, due))
    if isinstance(terms, list):
        raise ValueError(f"invalid cobv: {terms}")
    txid = item.txid if item.txid is not None else new_txid(provider.rng)
    provider.charges.create("cobv", txid, terms)
    return txid
