"""The references an item carries — ``endToEndId``, ``txid``, ``rtrId``, ``idRec``,
``idempotencyKey`` and the provider's own ``id`` — wherever its kind keeps them, so that a
person can find every item by any of them (``pixrecon events --ref``).

Read from the payload as stored, tolerantly: the same function indexes new items, old
items (migration 0013) and shows an item's references.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from reconcile.models import ItemKind
from reconcile.payloads.tolerant import spelling

REF_MAX_LENGTH = 100
"""Longer values are no business key of the provider's; they are not indexed."""
ENVELOPES = ("data", "payload")
"""Where an accounts notification keeps its object (``payload`` from some senders)."""

Refs = dict[str, list[str]]

# (name in the payload, name shown): the accounts API spells the txid ``txId``, and a
# statement line names the Pix it returns ``originalEndToEndId``.
_MOVEMENT = (("id", "id"), ("idempotencyKey", "idempotencyKey"), ("endToEndId", "endToEndId"))
_TXID = (("txId", "txid"),)
_ANY = (
    *_MOVEMENT,
    ("txid", "txid"),
    *_TXID,
    ("rtrId", "rtrId"),
    ("idRec", "idRec"),
)


def whole_number(value: Any) -> Any:
    """A JSON number whose fraction is zeros (``123.0``: how Java's ``Double`` writes a
    numeric id) as the integer it is, so that it keys and is found as ``123`` does;
    anything else as it came. A number of more than 40 digits is no id (and ``1e999999``
    must not be expanded)."""
    if isinstance(value, Decimal | float) and not isinstance(value, bool):
        number = Decimal(value) if isinstance(value, float) else value
        if number.is_finite() and number.adjusted() < 40 and number == number.to_integral_value():
            return int(number)
    return value


def ref_text(value: Any) -> str | None:
    """``value`` as a reference is indexed (and found): text or an integer (a number whose
    fraction is zeros too), without the whitespace around it; ``None`` for anything else."""
    if isinstance(value, bool):
        return None
    value = whole_number(value)
    if isinstance(value, int):
        value = str(value)
    if not isinstance(value, str):
        return None
    # As the item's key reads it: a padded id is found by the id itself.
    text = value.strip()
    if 0 < len(text) <= REF_MAX_LENGTH and "\x00" not in text:
        return text
    return None


def _objects(value: Any) -> Iterator[dict[str, Any]]:
    """An object, or the objects of an array (refunds come both ways)."""
    if isinstance(value, dict):
        yield value
    elif isinstance(value, list):
        yield from (entry for entry in value if isinstance(entry, dict))


# Names the provider documents: under one of these a field is no other spelling of the one
# sought, and the common item (a Pix without a txid) pays no respelling of its fields.
_DOCUMENTED = frozenset(
    (
        *(source for source, _ in _ANY),
        *("valor", "horario", "infoPagador", "pagador", "componentesValor", "devolucoes"),
        *("chave", "status", "natureza", "motivo", "type", "data", "payment", "refunds"),
        *("createdAt", "amount", "solicitacao", "liquidacao"),
    )
)


def _respelled(obj: dict[str, Any], name: str) -> Any:
    """The field under another spelling (``end_to_end_id``, ``EndToEndID``): the item's
    key is read from there too (flagged), and must be found by it."""
    wanted = spelling(name)
    return next(
        (
            value
            for given, value in obj.items()
            if isinstance(given, str) and given not in _DOCUMENTED and spelling(given) == wanted
        ),
        None,
    )


class _Found:
    def __init__(self) -> None:
        self.refs: Refs = {}

    def take(self, holder: Any, names: tuple[tuple[str, str], ...]) -> None:
        for obj in _objects(holder):
            for source, shown in names:
                value = ref_text(obj[source] if source in obj else _respelled(obj, source))
                if value is not None and value not in self.refs.setdefault(shown, []):
                    self.refs[shown].append(value)
        self.refs = {name: values for name, values in self.refs.items() if values}


def notification_slot(payload: dict[str, Any]) -> str | None:
    """Where an accounts notification keeps its object: ``data`` (or ``payload``), else
    another spelling of either (``Data``) that holds something, as the reader took it
    from there. The documented names are looked up first: they pay nothing more."""
    slot = next((name for name in ENVELOPES if name in payload), None)
    if slot is not None and payload[slot] not in (None, ""):
        return slot
    for name in ENVELOPES:
        wanted = spelling(name)
        for given, value in payload.items():
            if given != name and spelling(given) == wanted and value not in (None, ""):
                return str(given)
    return slot


def notification_data(payload: Any) -> Any:
    """The object of an accounts notification, under ``data`` or ``payload`` (or another
    spelling of either)."""
    if isinstance(payload, dict):
        slot = notification_slot(payload)
        return payload[slot] if slot is not None else None
    return None


def item_refs(kind: str, payload: Any) -> Refs:
    """Name → values, for the item of ``kind`` whose stored payload is ``payload``."""
    found = _Found()
    if not isinstance(payload, dict):
        return found.refs
    if kind == ItemKind.PIX.value:
        found.take(payload, (("endToEndId", "endToEndId"), ("txid", "txid")))
        found.take(payload.get("devolucoes"), (("rtrId", "rtrId"),))
    elif kind == ItemKind.PIX_REFUND.value:
        found.take(payload, (("endToEndId", "endToEndId"),))
        found.take(payload.get("devolucao"), (("rtrId", "rtrId"), ("id", "id")))
    elif kind == ItemKind.REC.value:
        found.take(payload, (("idRec", "idRec"),))
    elif kind == ItemKind.COBR.value:
        found.take(payload, (("txid", "txid"), ("idRec", "idRec")))
        found.take(payload.get("tentativas"), (("endToEndId", "endToEndId"),))
    elif kind == ItemKind.CHARGE.value:
        found.take(payload.get("data"), (("txid", "txid"), ("idRec", "idRec"), ("id", "id")))
    elif kind == ItemKind.ACCOUNTS_STATEMENT.value:
        found.take(
            payload,
            (
                *_MOVEMENT,
                ("originalEndToEndId", "endToEndId"),
                *_TXID,
                ("infractionId", "infractionId"),
            ),
        )
    elif kind == ItemKind.UNSUPPORTED.value:
        found.take(payload, _ANY)
        found.take(notification_data(payload), _ANY)
        # A Pix kept without its own key may list refunds with theirs; a refund kept with
        # its Pix's key has its own beside it, though not as documented.
        found.take(payload.get("devolucoes"), (("rtrId", "rtrId"),))
        found.take(payload.get("devolucao"), (("rtrId", "rtrId"),))
    elif kind.startswith("accounts.") and kind != ItemKind.ACCOUNTS_BALANCE.value:
        data = notification_data(payload)
        found.take(data, (*_MOVEMENT, *_TXID))
        if isinstance(data, dict):
            found.take(data.get("refunds"), (("endToEndId", "endToEndId"),))
    return found.refs


def ref_values(refs: Refs) -> tuple[str, ...]:
    """Every value once, whatever it is named: what the index holds."""
    return tuple(sorted({value for values in refs.values() for value in values}))
