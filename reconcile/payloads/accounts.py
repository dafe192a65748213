"""Accounts (cash-out) API notifications: ``{"type": T, "data": {...}}``.

TRANSFER, RECEIVE, REFUND, CASHOUT and INFRACTION are understood; any other type (invoice,
crypto, types not yet known) is stored as ``unsupported`` and acknowledged, because the
provider disables a webhook that keeps failing. Senders vary the envelope: the object may
come under ``payload``, ``data`` may be an array of them, or the body an array of
notifications (one item each), and the type may be named inside the object
(``webhookType``) rather than beside it, and each of these names may be spelt otherwise
(``Type``, ``Data``: read as a key's other spelling is, flagged where it came); a body that
cannot be taken apart at all is kept whole as ``unsupported``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any, ClassVar

from pydantic import BeforeValidator, Field, StringConstraints, WithJsonSchema

from reconcile.inbox import NewItem
from reconcile.money import InvalidAmount, parse_amount
from reconcile.payloads import (
    AMOUNT,
    UNKNOWN_STATUS,
    Amount,
    ItemWarning,
    PayloadInvalid,
    Tolerant,
    one_of,
    pointer,
    timestamp,
)
from reconcile.payloads.accounts_types import (
    KNOWN_TYPES,
    beside,
    disagreeing,
    field_of,
    from_path,
    inside,
    is_notification,
    names_its_own,
    path_label,
    respelled,
    slot_of,
)
from reconcile.payloads.items import Refusal, keyed, new_item, unsupported_item
from reconcile.payloads.refs import ENVELOPES, whole_number
from reconcile.payloads.text import held_json
from reconcile.payloads.tolerant import key_renamed

TYPE_OF_KIND = {kind.value: name for name, kind in KNOWN_TYPES.items()}
MOVEMENT_STATUSES = (
    "PROCESSING",
    "LIQUIDATED",
    "CANCELED",
    "REJECTED",
    "REFUNDED",
    "PARTIALLY_REFUNDED",
)
INFRACTION_STATUSES = (
    "OPEN",
    "ACKNOWLEDGED",
    "AGREED",
    "DISAGREED",
    "CLOSED",
    "CANCELED",
    "CANCELLED",
)


def _as_text(value: object) -> object:
    # Providers send numeric ids as JSON numbers or strings; keys must not depend on which.
    value = whole_number(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


def _id_schema(max_length: int) -> WithJsonSchema:
    return WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "minLength": 1, "maxLength": max_length},
                {"type": "integer"},
            ]
        }
    )


ProviderId = Annotated[
    str, BeforeValidator(_as_text), StringConstraints(min_length=1, max_length=100), _id_schema(100)
]
EndToEndId = Annotated[
    str, BeforeValidator(_as_text), StringConstraints(min_length=1, max_length=64), _id_schema(64)
]


class Payment(Tolerant):
    EXPECT = {"amount": AMOUNT}

    currency: str | None = None
    amount: Amount | None = None


class Account(Tolerant):
    ispb: str | None = None
    issuer: str | None = None
    number: str | None = None
    accountType: str | None = None
    document: str | None = None
    name: str | None = None


class RefundInfo(Tolerant):
    """One return of a payout (or refund of a Pix received) as a movement lists it.
    ``createdAt`` is not in the documented shape; when a provider sends it, it says on
    which day the return happened."""

    EXPECT = {"status": one_of(*MOVEMENT_STATUSES), "createdAt": timestamp()}

    # Bounded as a movement's own: what the payout_return row cannot hold is flagged
    # here, or the row would be refused and the payout's movement with it.
    endToEndId: EndToEndId | None = None
    status: str | None = Field(default=None, min_length=1, max_length=32)
    errorCode: str | None = Field(default=None, max_length=32)
    pixRefundAmount: Amount | None = None
    createdAt: str | None = None


class Identified(Tolerant):
    KEYS: ClassVar[tuple[str, ...]] = ("id", "idempotencyKey", "endToEndId")
    ANY_KEY = True
    EXPECT = {"status": one_of(*MOVEMENT_STATUSES, required=True), "createdAt": timestamp()}

    id: ProviderId | None = None
    idempotencyKey: ProviderId | None = None
    endToEndId: EndToEndId | None = None
    status: str | None = Field(default=None, min_length=1, max_length=32)
    createdAt: str | None = None

    def reference(self) -> str | None:
        return self.id or self.idempotencyKey or self.endToEndId


class MovementData(Identified):
    """TRANSFER, RECEIVE and REFUND: a Pix movement on the account."""

    EXPECT = {**Identified.EXPECT, "creditDebitType": one_of("CREDIT", "DEBIT")}
    # Some senders write one return as the object itself, as a Pix's ``devolucoes`` is.
    ONE_OR_MANY = ("refunds",)

    pixKey: str | None = None
    txId: str | None = Field(default=None, max_length=35)
    errorCode: str | None = Field(default=None, max_length=32)
    creditDebitType: str | None = Field(default=None, max_length=16)
    localInstrument: str | None = None
    creditorAccount: Account | None = None
    debtorAccount: Account | None = None
    payment: Payment | None = None
    refunds: list[RefundInfo] | None = None

    def returns(self) -> list[tuple[int, RefundInfo]]:
        """The listed returns with their position (from 1), without the entries that were
        no object (flagged, and read as an empty one to keep the positions): a ``null``
        in the list is no return of money."""
        return [
            (n, r)
            for n, r in enumerate(self.refunds or [], start=1)
            if r.model_dump(exclude_none=True)
        ]

    def _expectations(self, already: set[str]) -> list[ItemWarning]:
        found = super()._expectations(already)
        # A movement always moves an amount: without a payment object it lacks one as
        # surely as a payment without ``amount`` does, and is flagged at the same place.
        if self.payment is None and pointer(["payment"]) not in already:
            found.append(ItemWarning(pointer(["payment", "amount"]), AMOUNT.what))
        return found


class CashoutData(Identified):
    """A pre-settlement failure of a cash-out; often only status and keys. Its SPI
    ``errorCode`` (AM04 …) comes beside ``data`` in the documented envelope; some senders
    put it inside."""

    message: str | None = None
    errorCode: str | None = Field(default=None, max_length=32)


class InfractionData(Identified):
    """A MED infraction: no endToEndId, the infraction must be fetched for it. Its amounts'
    field names are not public: the first of each list that is present is read."""

    KEYS = ("id",)
    ANY_KEY = False
    EXPECT = {"status": one_of(*INFRACTION_STATUSES, required=True), "createdAt": timestamp()}
    AMOUNTS: ClassVar[tuple[tuple[str, ...], ...]] = (
        ("amount", "transactionAmount", "value", "valor"),
        ("debitedAmount", "debited_amount"),
        ("blockedAmount", "blocked_amount"),
    )

    def _expectations(self, already: set[str]) -> list[ItemWarning]:
        found = super()._expectations(already)
        # Money at risk in a MED case that cannot be read must say so, not vanish.
        extra = self.model_extra or {}
        for names in self.AMOUNTS:
            name = next((n for n in names if n in extra), None)
            # ``null`` says there is none (an open case has debited nothing): no amount
            # to read, nothing to flag.
            if name is None or extra[name] is None or pointer([name]) in already:
                continue
            try:
                parse_amount(extra[name])
            except InvalidAmount:
                found.append(ItemWarning(pointer([name]), AMOUNT.what))
        return found


DATA_MODELS: dict[str, type[Identified]] = {
    "TRANSFER": MovementData,
    "RECEIVE": MovementData,
    "REFUND": MovementData,
    "CASHOUT": CashoutData,
    "INFRACTION": InfractionData,
}


# What a terse notification (a CASHOUT's failure above all) may carry beside ``data``
# rather than in it: its keys and its status.
_BESIDE = ("id", "idempotencyKey", "endToEndId", "status")
# Names a key goes by in some senders' bodies, besides its documented one.
_KEY_ALIASES = {"INFRACTION": {"id": "infractionId"}}


def _says_something(value: object) -> bool:
    return value is not None and value != ""


def _keyed(found: dict[str, Any], kind_name: str) -> bool:
    """Whether ``found`` holds a business key of ``kind_name``'s, under any name it goes by."""
    keys = DATA_MODELS[kind_name].KEYS
    aliases = _KEY_ALIASES.get(kind_name, {})
    names = [*keys, *(aliases[k] for k in keys if k in aliases)]
    if any(_says_something(found.get(name)) for name in names):
        return True
    # Another spelling of a key's name (``Id``) is read, and flagged, by the data model.
    return any(respelled(found, name) for name in keys)


def _completed(
    document: dict[str, Any], slot: str, inner: dict[str, Any], kind_name: str
) -> tuple[dict[str, Any], list[ItemWarning]]:
    """``inner`` with the keys and status it lacks taken from where the sender put them:
    beside it in the envelope, or under a name of the key's own (an infraction's
    ``infractionId``). Each is flagged where it was found: refused for want of a key the
    body holds, the delivery would be retried until the provider disabled the webhook."""
    aliases = _KEY_ALIASES.get(kind_name, {})
    # (the object, the name there, the name in data, where that is in the body)
    sources = [
        *((inner, alias, name, pointer([slot, alias])) for name, alias in aliases.items()),
        *((document, name, name, pointer([name])) for name in _BESIDE),
        *((document, alias, name, pointer([alias])) for name, alias in aliases.items()),
    ]
    completed = dict(inner)
    moved: list[ItemWarning] = []
    for holder, given, name, at in sources:
        if _says_something(completed.get(name)) or not _says_something(holder.get(given)):
            continue
        completed[name] = holder[given]
        beside = f"{name} inside {slot} (read from beside it)"
        moved.append(ItemWarning(at, beside if given == name else key_renamed(name)))
    return (completed, moved) if moved else (inner, [])


_EACH = 'one notification {"type": ..., "data": {...}} (an array became one item each)'


def _each(document: list[Any], path_type: str | None) -> list[NewItem]:
    """A bare array of notifications, as some senders batch them: one item each, as for a
    ``data`` array (each item's payload is its own notification), flagged at ``/``. An
    entry that cannot be read is kept whole, as ``unsupported``, beside the readable ones."""
    refusal = Refusal()
    items: list[NewItem] = []
    for index, entry in enumerate(document):
        at = pointer([index])
        if not isinstance(entry, dict):
            refusal.not_an_object(at, "an accounts notification")
            refusal.rejected.append((at, entry))
            continue
        try:
            items.extend(accounts_items(entry, path_type))
        except PayloadInvalid as exc:
            refusal.violations.extend(
                {**v, "property": at + v["property"].rstrip("/")} for v in exc.violations or []
            )
            refusal.rejected.append((at, entry))
    flagged = [replace(item, warnings=_said_at(item.warnings, "/", _EACH)) for item in items]
    what = "an accounts notification"
    return refusal.keep_the_rest(flagged, path_label(path_type), what)


_ONE_EACH = "one object (an array became one item each)"


def _each_own(
    document: dict[str, Any], slot: str, inner: list[Any], path_type: str | None
) -> list[NewItem]:
    """A ``data`` array whose objects name each its own type (``webhookType``), under an
    envelope that names none: each object read as the notification it is, by its own
    type. Read as one type, a RECEIVE beside a TRANSFER would be booked as a payout; an
    object that names no type is read as the path says, else kept as unsupported."""
    refusal = Refusal()
    items: list[NewItem] = []
    under = pointer([slot])
    for index, entry in enumerate(inner):
        at = pointer([slot, index])
        try:
            found = accounts_items({**document, slot: entry}, path_type)
        except PayloadInvalid as exc:
            refusal.violations.extend(
                {**v, "property": at + v["property"].removeprefix(under).rstrip("/")}
                for v in exc.violations or []
            )
            refusal.rejected.append((at, entry))
            continue
        items.extend(replace(i, warnings=_said_at(i.warnings, under, _ONE_EACH)) for i in found)
    return refusal.keep_the_rest(items, path_label(path_type), "an accounts notification")


_HELD = "an object (it came as JSON text, read as the object it holds)"


def _held(document: dict[str, Any], slot: str, path_type: str | None) -> list[NewItem] | None:
    """The notification whose object came encoded once more, as a JSON string, read as the
    object it holds (each item keeps that object; the delivery keeps the body as it came):
    kept as unsupported, a TRANSFER would never reach its payout. ``None`` when the text
    holds no object or array."""
    text = document[slot]
    held = held_json(text) if isinstance(text, str) else None
    if held is None:
        return None
    items = accounts_items({**document, slot: held}, path_type)
    return [replace(i, warnings=_said_at(i.warnings, pointer([slot]), _HELD)) for i in items]


def _said_at(warnings: tuple[ItemWarning, ...], at: str, expected: str) -> tuple[ItemWarning, ...]:
    """``warnings`` with ``expected`` said at ``at`` too, after what was already said there."""
    there = next((w for w in warnings if w.pointer == at), None)
    first = ItemWarning(at, expected if there is None else f"{there.expected}; {expected}")
    return (first, *(w for w in warnings if w.pointer != at))


def _against_beside(
    named_beside: bool, raw: dict[str, Any], slot: str, kind_name: str
) -> list[ItemWarning]:
    if not named_beside:
        return []
    against = disagreeing(raw, pointer([slot]), kind_name)
    return [against] if against is not None else []


def key_of(kind_name: str, data: Identified) -> str:
    key = f"accounts:{kind_name}:{data.reference()}:{data.status or UNKNOWN_STATUS}"
    if isinstance(data, MovementData) and data.returns():
        # A second partial refund keeps the status; the refund count makes it a new fact.
        key += f":r{len(data.returns())}"
    return key


def accounts_items(document: Any, path_type: str | None = None) -> list[NewItem]:
    """``{type, data}``; ``path_type`` is what follows ``/webhooks/accounts/`` in the path
    (one segment, or several joined by ``/``), for bodies that name no type."""
    if not isinstance(document, dict):
        if isinstance(document, list) and any(map(is_notification, document)):
            return _each(document, path_type)
        shape = ItemWarning("/", 'an object {"type": ..., "data": {...}}')
        return [unsupported_item(path_label(path_type), document, shape)]
    kind_name, warnings = beside(document, path_type)
    # Named beside the object, the type is checked against the object's own word.
    named_beside = kind_name is not None
    if kind_name is None:
        # Only a body without ``type`` beside ``data`` gets here: the object's own word,
        # else the path's.
        slot = slot_of(document)
        inner = document[slot] if slot is not None else None
        if slot is not None and isinstance(inner, str):
            held = _held(document, slot, path_type)
            if held is not None:
                return held
        if slot is not None and isinstance(inner, list) and any(map(names_its_own, inner)):
            return _each_own(document, slot, inner, path_type)
        own = inside(inner, slot, path_type) if slot is not None else None
        if own is not None:
            kind_name = own[0]
            warnings += [own[1]] if own[1] is not None else []
        else:
            kind_name, read = from_path(path_type)
            warnings += read
    if kind_name is None:
        return [unsupported_item("UNKNOWN", document, warnings[0] if warnings else None)]
    if kind_name not in KNOWN_TYPES:
        return [unsupported_item(kind_name, document)]
    slot = slot_of(document)
    if slot is None:
        if not _keyed(document, kind_name):
            return [unsupported_item(kind_name, document, ItemWarning("/data", "the data object"))]
        # A terse notification may come flat, its fields beside ``type``: read as the
        # data object it stands for (the item keeps them all, under ``data``).
        typed = field_of(document, "type")
        fields = {k: v for k, v in document.items() if k != typed}
        document = {**{k: v for k, v in document.items() if k == typed}, "data": fields}
        slot = "data"
        flat = "the data object (its fields were read from beside type)"
        warnings.append(ItemWarning("/data", flat))
    if slot not in ENVELOPES:
        respelt = "the notification's object under its documented name, data (read from this one)"
        warnings.append(ItemWarning(pointer([slot]), respelt))
    elif slot != "data":
        warnings.append(ItemWarning(pointer([slot]), "the notification under data"))
    inner = document[slot]
    if isinstance(inner, dict):
        inner, moved = _completed(document, slot, inner, kind_name)
        if moved:
            document = {**document, slot: inner}
            warnings.extend(moved)
    if isinstance(inner, dict):
        candidates = [(pointer([slot]), inner)]
    elif isinstance(inner, list):
        warnings.append(ItemWarning(pointer([slot]), "one object (an array became one item each)"))
        candidates = [(pointer([slot, i]), entry) for i, entry in enumerate(inner)]
    else:
        held = _held(document, slot, path_type) if isinstance(inner, str) else None
        if held is not None:
            return held
        return [unsupported_item(kind_name, document, ItemWarning(pointer([slot]), "an object"))]
    refusal = Refusal()
    items = [
        new_item(
            KNOWN_TYPES[kind_name],
            key_of(kind_name, data),
            # Each item keeps the envelope with its own object in it.
            document if raw is inner else {**document, slot: raw},
            [
                *warnings,
                *_against_beside(named_beside, raw, slot, kind_name),
                *data.warnings(pointer([slot])),
            ],
        )
        for data, raw, _ in keyed(
            DATA_MODELS[kind_name], candidates, f"a {kind_name} notification", refusal
        )
    ]
    return refusal.keep_the_rest(items, kind_name, f"a {kind_name} notification")
