"""Which type an accounts notification is, by what its body and its path say.

The body's word is the provider's: ``type`` beside ``data``, else ``webhookType`` (or
``type``) inside the object, as the provider's movements carry it. The path
(``/webhooks/accounts/{kind}``, or several segments when the provider appends a type to a
URL registered with one) is only where the merchant registered the URL: it names the type
of a body that names none, and a disagreement with the body is flagged for whoever set
the URLs. A path segment enters a key only when it is a type the provider notifies: any
other word may be anything a sender put there, a person's name as well as a CPF.
"""

from __future__ import annotations

from typing import Any

from reconcile.models import ItemKind
from reconcile.payloads import ItemWarning, pointer
from reconcile.payloads.refs import ENVELOPES, notification_slot
from reconcile.payloads.tolerant import spelling

KNOWN_TYPES = {
    "TRANSFER": ItemKind.ACCOUNTS_TRANSFER,
    "RECEIVE": ItemKind.ACCOUNTS_RECEIVE,
    "REFUND": ItemKind.ACCOUNTS_REFUND,
    "CASHOUT": ItemKind.ACCOUNTS_CASHOUT,
    "INFRACTION": ItemKind.ACCOUNTS_INFRACTION,
}
# The types the provider notifies: those read, and those it has whose shape is unknown
# (kept as unsupported, under their name). Only these of a path's words enter a key.
PATH_TYPES = frozenset({*KNOWN_TYPES, "INVOICE", "CRYPTO"})
# Where a body without ``type`` beside ``data`` names it inside: ``webhookType`` is in every
# movement of the provider's (and the sandbox's), ``type`` in some senders'.
INNER_TYPE = ("webhookType", "type")
UNNAMED = "the notification type (the path names none)"


def named(declared: str, at: str) -> tuple[str, list[ItemWarning]]:
    """A type written as text, as the type it stands for, and how it was written otherwise
    than documented (flagged at ``at``)."""
    stripped = declared.strip()
    # ASCII only: str.upper() maps some other letters onto ASCII ones (a dotless i to I).
    name = stripped.upper() if stripped.isascii() else "UNKNOWN"
    read = (
        [ItemWarning(at, f"the type without surrounding whitespace (read as {name})")]
        if stripped != declared
        else []
    )
    # Read as the documented type it stands for, and flagged, as a status in another case
    # is: whoever reads the flags learns how the provider writes it.
    if name in KNOWN_TYPES and stripped != name:
        read.append(ItemWarning(at, f"the type in capitals (read as {name})"))
    return name, read


def path_types(path: str | None) -> tuple[str, ...]:
    """The types the segments of ``path`` (what follows ``/webhooks/accounts/``) name, in
    order, each once. Any other segment names none: only asked of a body that names no
    type of its own, or when the path has one, so a well-formed delivery pays nothing."""
    found: list[str] = []
    for segment in (path or "").split("/"):
        name = segment.strip().upper() if segment.isascii() else ""
        if name in PATH_TYPES and name not in found:
            found.append(name)
    return tuple(found)


def path_label(path: str | None) -> str:
    """The word of ``path`` an unsupported item's key may carry: the type it names last
    (what the provider appended), else ``UNKNOWN``."""
    types = path_types(path)
    return types[-1] if types else "UNKNOWN"


def _against_path(types: tuple[str, ...], name: str) -> str | None:
    others = [t for t in types if t != name]
    if not others:
        return None
    return f"the type the path names, {' and '.join(others)} (read as the body's)"


def _path_over(types: tuple[str, ...], at: str) -> tuple[str, ItemWarning]:
    """Where the body's word at ``at`` is no type the provider notifies and the path names
    one: a movement's own field may use another vocabulary than the notification's
    ``type``, and read by that word a TRANSFER would be kept as unsupported and never reach
    its payout. The path's type, flagged at ``at`` (without the word: it is the sender's)."""
    return types[-1], ItemWarning(at, f"a notification type (read as {types[-1]}, the path's)")


def _said(at: str, parts: list[str]) -> list[ItemWarning]:
    return [ItemWarning(at, "; ".join(parts))] if parts else []


def _says_something(value: object) -> bool:
    return value is not None and value != ""


def respelled(holder: dict[str, Any], name: str) -> str | None:
    """The field of ``holder`` that is ``name`` spelt otherwise (``Type``, ``DATA``,
    ``webhook_type``: case, underscores and whitespace aside) and holds something, as a
    business key is read from another spelling of its name. Only asked where ``name``
    itself says nothing, so the documented shape pays nothing for it."""
    wanted = spelling(name)
    return next(
        (
            given
            for given, value in holder.items()
            if given != name and spelling(given) == wanted and _says_something(value)
        ),
        None,
    )


def field_of(holder: dict[str, Any], name: str) -> str:
    """Where ``holder`` keeps ``name``: under that name, else under another spelling of it
    (``name`` when neither holds anything)."""
    if _says_something(holder.get(name)):
        return name
    return respelled(holder, name) or name


def renamed(documented: str, given: str, what: str = "the notification type") -> list[str]:
    """What is said at a field read from another spelling of its name: nothing when it
    came under its documented name."""
    if given == documented:
        return []
    return [f"{what} under its documented name, {documented} (read from this one)"]


def beside(document: dict[str, Any], path: str | None) -> tuple[str | None, list[ItemWarning]]:
    """The type ``type`` (else ``webhookType``) beside ``data`` names, each read from another
    spelling of its name where the documented one says nothing; flagged where it is not as
    documented or the path names another; ``None`` when there it names none."""
    declared = document.get("type")
    given = "type"
    if not _says_something(declared):
        given = respelled(document, "type") or "type"
        declared = document.get(given)
    if isinstance(declared, str) and declared.strip():
        at = pointer([given])
        name, read = named(declared, at)
        parts = [*renamed("type", given), *(w.expected for w in read)]
        # A per-type URL naming the body's own type, the common case, reads no further.
        if path and path.upper() != name:
            against = _against_path(path_types(path), name)
            parts += [against] if against else []
        return name, _said(at, parts)
    flagged = (
        [ItemWarning(pointer([given]), "the notification type, a string")]
        if given in document
        else []
    )
    # The provider names its movements' type ``webhookType`` inside them; some senders put
    # that name beside ``data``.
    given = field_of(document, "webhookType")
    other = document.get(given)
    if isinstance(other, str) and other.strip():
        at = pointer([given])
        name, read = named(other, at)
        types = path_types(path)
        if name not in PATH_TYPES and types:
            name, read_there = _path_over(types, at)
            return name, [*flagged, read_there]
        parts = [
            "the notification's type as type (read from here)",
            *renamed("webhookType", given),
            *(w.expected for w in read),
        ]
        against = _against_path(path_types(path), name) if path else None
        return name, [*flagged, *_said(at, [*parts, *([against] if against else [])])]
    return None, flagged


def disagreeing(inner: object, at: str, name: str) -> ItemWarning | None:
    """The flag at the object's own ``webhookType`` where it names another type the provider
    notifies than ``name``, the type beside ``data`` it was read as: one of the two is
    wrong, and whoever reads the flags must learn that the movement may be another."""
    if not isinstance(inner, dict):
        return None
    given = field_of(inner, "webhookType")
    own = inner.get(given)
    if not isinstance(own, str) or not own.isascii():
        return None
    said = own.strip().upper()
    if said == name or said not in PATH_TYPES:
        return None
    return ItemWarning(
        f"{at}/{given}", f"the type beside data, {name} (read as that; this names {said})"
    )


def inside(inner: object, slot: str, path: str | None) -> tuple[str, ItemWarning | None] | None:
    """The type ``inner``, a notification's object under ``slot``, names of its own, and
    the flag at where it was read: ``None`` when it names none. Kept as unsupported, a
    TRANSFER would never reach its payout. A path that names the same type named it as
    documented: nothing to flag."""
    if not isinstance(inner, dict):
        return None
    fields = [(field, field) for field in INNER_TYPE if _says_something(inner.get(field))]
    if not fields:
        fields = [(field, given) for field in INNER_TYPE if (given := respelled(inner, field))]
    for documented, field in fields:
        declared = inner.get(field)
        if isinstance(declared, str) and declared.strip():
            at = pointer([slot, field])
            name, read = named(declared, at)
            types = path_types(path)
            spelt = renamed(documented, field)
            if types == (name,) and not spelt:
                return name, None
            if name not in PATH_TYPES and types:
                return _path_over(types, at)
            parts = (
                []
                if types == (name,)
                else ["the notification's type as type beside data (read from here)"]
            )
            against = _against_path(types, name)
            parts += spelt + [w.expected for w in read] + ([against] if against else [])
            return name, ItemWarning(at, "; ".join(parts))
    return None


def names_its_own(inner: object) -> bool:
    """Whether ``inner`` is an object that names its type (see ``inside``)."""
    return inside(inner, "data", None) is not None


def from_path(path: str | None) -> tuple[str | None, list[ItemWarning]]:
    """The type of a body that names none, as its path names it; several named (a type
    appended to a URL registered with another), the last, which the provider appended,
    flagged; none, ``None`` and flagged when there was a segment that could have."""
    types = path_types(path)
    if not types:
        return None, [ItemWarning("/type", UNNAMED)] if path else []
    if len(types) == 1:
        return types[0], []
    several = f"one type in the path (it names {' and '.join(types)}; read as the last)"
    return types[-1], [ItemWarning("/type", several)]


def slot_of(document: dict[str, Any]) -> str | None:
    """Where the notification keeps its object (``Data`` read, flagged by the reader)."""
    return notification_slot(document)


def is_notification(entry: object) -> bool:
    """Whether ``entry``, one of a bare array's, is an accounts notification (by a field
    of its envelope's, under any spelling of its name)."""
    if not isinstance(entry, dict):
        return False
    if "type" in entry or any(slot in entry for slot in ENVELOPES):
        return True
    envelope = {spelling(name) for name in ("type", *ENVELOPES)}
    return any(isinstance(given, str) and spelling(given) in envelope for given in entry)
