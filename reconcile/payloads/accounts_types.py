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
from reconcile.payloads.refs import ENVELOPES

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


def beside(document: dict[str, Any], path: str | None) -> tuple[str | None, list[ItemWarning]]:
    """The type ``type`` (else ``webhookType``) beside ``data`` names, flagged where it is
    not as documented or the path names another; ``None`` when there it names none."""
    declared = document.get("type")
    if isinstance(declared, str) and declared.strip():
        name, read = named(declared, "/type")
        parts = [w.expected for w in read]
        # A per-type URL naming the body's own type, the common case, reads no further.
        if path and path.upper() != name:
            against = _against_path(path_types(path), name)
            parts += [against] if against else []
        return name, _said("/type", parts)
    flagged = (
        [ItemWarning("/type", "the notification type, a string")] if "type" in document else []
    )
    # The provider names its movements' type ``webhookType`` inside them; some senders put
    # that name beside ``data``.
    other = document.get("webhookType")
    if isinstance(other, str) and other.strip():
        name, read = named(other, "/webhookType")
        types = path_types(path)
        if name not in PATH_TYPES and types:
            name, read_there = _path_over(types, "/webhookType")
            return name, [*flagged, read_there]
        parts = ["the notification's type as type (read from here)", *(w.expected for w in read)]
        against = _against_path(path_types(path), name) if path else None
        return name, [*flagged, *_said("/webhookType", [*parts, *([against] if against else [])])]
    return None, flagged


def inside(inner: object, slot: str, path: str | None) -> tuple[str, ItemWarning | None] | None:
    """The type ``inner``, a notification's object under ``slot``, names of its own, and
    the flag at where it was read: ``None`` when it names none. Kept as unsupported, a
    TRANSFER would never reach its payout. A path that names the same type named it as
    documented: nothing to flag."""
    if not isinstance(inner, dict):
        return None
    for field in INNER_TYPE:
        declared = inner.get(field)
        if isinstance(declared, str) and declared.strip():
            at = pointer([slot, field])
            name, read = named(declared, at)
            types = path_types(path)
            if types == (name,):
                return name, None
            if name not in PATH_TYPES and types:
                return _path_over(types, at)
            against = _against_path(types, name)
            parts = ["the notification's type as type beside data (read from here)"]
            parts += [w.expected for w in read] + ([against] if against else [])
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
    return next((name for name in ENVELOPES if name in document), None)
