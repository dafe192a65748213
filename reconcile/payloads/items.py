"""From a delivery's body to inbox items, the same way for every API family: find the
objects where the family's shapes put items, read each tolerantly, refuse the delivery only
when an item has no business key, and keep a body no shape explains whole, as
``unsupported`` (the provider disables a webhook that keeps failing)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from pydantic import ValidationError

from reconcile.inbox import NewItem, dump_json
from reconcile.models import ItemKind, ItemStatus
from reconcile.payloads import PayloadInvalid, violations
from reconcile.payloads.refs import ENVELOPES, item_refs, ref_text, ref_values
from reconcile.payloads.text import mended_warnings
from reconcile.payloads.tolerant import ItemWarning, Tolerant, pointer, spelling

M = TypeVar("M", bound=Tolerant)

Candidate = tuple[str, Any]
"""A JSON pointer into the body, and what is there where an item should be."""

_LABEL = re.compile(r"[A-Z0-9_.-]{1,40}")


class Unsplittable(Exception):
    """The body matches none of its family's shapes."""

    def __init__(self, warning: ItemWarning) -> None:
        super().__init__(warning.expected)
        self.warning = warning


@dataclass(frozen=True)
class Split:
    """Where a body puts its items, and what about the body itself was not as documented
    (flagged on every item it holds)."""

    candidates: list[Candidate]
    warnings: list[ItemWarning] = field(default_factory=list)

    def flag(self, items: list[NewItem]) -> list[NewItem]:
        if not self.warnings:
            return items
        return [
            replace(item, warnings=tuple(_unique([*self.warnings, *item.warnings])))
            for item in items
        ]


def _shapes(wrapper: str, what: str) -> str:
    return f'{{"{wrapper}": [...]}}, one {what} object or an array of them'


def _wraps(value: Any, wrapper: str) -> bool:
    return isinstance(value, dict) and wrapper in value


def _looks_like(value: Any, fields: frozenset[str]) -> bool:
    return isinstance(value, dict) and not fields.isdisjoint(value)


def split_body(document: Any, wrapper: str, what: str, fields: frozenset[str]) -> Split:
    """``{wrapper: [...]}`` (the standard), ``{wrapper: {...}}``, a flat object or a bare
    array: every shape real deliveries use (docs/design.md §4). ``fields`` are the item's
    own: a flat object or a bare array is taken for items only when it has some, because
    whatever else a provider posts (a registration test, a ping) is no item without its
    key, and refusing it brings the webhook closer to being disabled."""
    if isinstance(document, list) and document and all(_wraps(e, wrapper) for e in document):
        # Documented bodies in one array, as a relay that batches deliveries sends them (or
        # sent one after another): each one's items, read where they are.
        found = [
            (pointer([i]) + where, raw)
            for i, entry in enumerate(document)
            for where, raw in _split(entry, wrapper, what, fields)
        ]
        batched = ItemWarning("/", f'one {{"{wrapper}": [...]}} body, not an array of them')
        return _unnested(Split(found, [batched]), what)
    if isinstance(document, dict) and wrapper not in document and not _looks_like(document, fields):
        # Some senders wrap the documented body once more, as accounts notifications are.
        for name in ENVELOPES:
            inner = document.get(name)
            if isinstance(inner, dict) and wrapper in inner:
                at = pointer([name])
                found = _split(inner, wrapper, what, fields)
                flagged = ItemWarning(at, f'{{"{wrapper}": [...]}} itself, not under {name}')
                return _unnested(
                    Split([(at + where, raw) for where, raw in found], [flagged]), what
                )
        enveloped = _enveloped_items(document, wrapper, what, fields)
        if enveloped is not None:
            return enveloped
    return _unnested(Split(_split(document, wrapper, what, fields)), what)


def _enveloped_items(
    document: dict[str, Any], wrapper: str, what: str, fields: frozenset[str]
) -> Split | None:
    """The items themselves in an envelope, without their wrapper (``{"data": [{...}]}``,
    ``{"data": {...}}``), read where they are and flagged at the envelope; ``None`` when
    no envelope holds anything with an item's fields. Only ever asked of a body that would
    otherwise be kept whole as unsupported. A ``type`` beside the envelope makes the body
    an accounts notification posted to the wrong URL: its movement is no Pix callback."""
    if "type" in document:
        return None
    for name in ENVELOPES:
        inner = document.get(name)
        if isinstance(inner, list) and any(_looks_like(entry, fields) for entry in inner):
            found = [(pointer([name, i]), entry) for i, entry in enumerate(inner)]
        elif _looks_like(inner, fields):
            found = [(pointer([name]), inner)]
        else:
            continue
        flagged = ItemWarning(pointer([name]), f"{_shapes(wrapper, what)}, not under {name}")
        return _unnested(Split(found, [flagged]), what)
    return None


def _unnested(split: Split, what: str) -> Split:
    """``{wrapper: [[{...}]]}``: the items one array deeper than documented, read where
    they are and flagged there; refusing them would refuse their keys with them."""
    candidates: list[Candidate] = []
    warnings = list(split.warnings)
    for at, raw in split.candidates:
        if isinstance(raw, list) and raw and all(isinstance(entry, dict) for entry in raw):
            candidates.extend((at + pointer([i]), entry) for i, entry in enumerate(raw))
            warnings.append(ItemWarning(at, f"one {what} object, not an array of them"))
        else:
            candidates.append((at, raw))
    return Split(candidates, warnings)


def _split(document: Any, wrapper: str, what: str, fields: frozenset[str]) -> list[Candidate]:
    if isinstance(document, list):
        if document and not any(_looks_like(entry, fields) for entry in document):
            raise Unsplittable(ItemWarning("/", _shapes(wrapper, what)))
        return [(pointer([i]), entry) for i, entry in enumerate(document)]
    if isinstance(document, dict):
        if wrapper not in document:
            # ``{}`` or an object with none of an item's fields names nothing at all — a
            # provider checking that the URL answers, not an item without its key: kept
            # as unsupported, never refused.
            if not _looks_like(document, fields):
                raise Unsplittable(ItemWarning("/", _shapes(wrapper, what)))
            return [("", document)]
        inner = document[wrapper]
        if isinstance(inner, list):
            return [(pointer([wrapper, i]), entry) for i, entry in enumerate(inner)]
        if isinstance(inner, dict):
            return [(pointer([wrapper]), inner)]
        raise Unsplittable(
            ItemWarning(pointer([wrapper]), f"an array of {what} objects or one {what} object")
        )
    raise Unsplittable(ItemWarning("/", _shapes(wrapper, what)))


class Refusal:
    """The violations of one delivery, gathered so that one answer names them all."""

    def __init__(self) -> None:
        self.violations: list[dict[str, str]] = []
        # Each candidate refused: where it was in the body, and the object as it came.
        self.rejected: list[Candidate] = []
        # Those whose key is there, readable, but not as documented: where each was in the
        # body → the flag at its key.
        self.malformed: dict[str, ItemWarning] = {}

    def not_an_object(self, at: str, what: str) -> None:
        self.violations.append({"property": at or "/", "message": f"{what} must be an object"})

    def without_key(self, model: Tolerant, at: str) -> None:
        """The key's problem first, then whatever else the item has (pointers into the
        body; expectations, never values)."""
        first = at if type(model).ANY_KEY else at + pointer(type(model).KEYS[:1])
        seen = {first or "/"}
        found = model.warnings()
        message = model.missing_key()
        for warning in found:
            if at + warning.pointer == first:
                message = f"expected {warning.expected}: it is the item's business key"
        self.violations.append({"property": first or "/", "message": message})
        for warning in found:
            where = (at + warning.pointer) or "/"
            if where not in seen:
                seen.add(where)
                self.violations.append(
                    {"property": where, "message": f"expected {warning.expected}"}
                )

    def raise_if_any(self, what: str) -> None:
        if self.violations:
            raise PayloadInvalid(
                f"the notification has {what} without a business key", self.violations
            )

    def keep_the_rest(
        self, items: list[NewItem], label: str, what: str, *, keyed_inside: bool = False
    ) -> list[NewItem]:
        """A delivery of which no item can be read is refused, naming every violation. One
        with readable items is not: refusing it would refuse them too, on every retry of
        the provider's, until it disables the webhook. Those are stored, and each item
        without its key is kept whole as ``unsupported``, with where it was in the body.
        ``keyed_inside``: a refused object holds an item that has its own key (a refund's
        ``rtrId`` in a Pix without its ``endToEndId``), so the delivery is not refused; nor
        is one with an object whose key is there but not as documented (``malformed``)."""
        if not items and not keyed_inside and not self.malformed:
            self.raise_if_any(what)
        return [
            *items,
            *(
                unsupported_item(
                    label,
                    raw,
                    self.malformed.get(at) or ItemWarning(at or "/", f"{what} with its key"),
                )
                for at, raw in self.rejected
            ),
        ]


def _as_it_came(raw: Any) -> Any:
    return raw


def keyed(
    model: type[M],
    candidates: Sequence[Candidate],
    what: str,
    refusal: Refusal,
    kept: Callable[[Any], Any] = _as_it_came,
) -> list[tuple[M, dict[str, Any], str]]:
    """Each candidate read as ``model``: (model, raw object, pointer) for those with their
    key; the others go to ``refusal``, as ``kept`` makes them."""
    found = []
    for at, raw in candidates:
        if not isinstance(raw, dict):
            refusal.not_an_object(at, what)
            refusal.rejected.append((at, kept(raw)))
            continue
        try:
            parsed = model.model_validate(raw)
        except ValidationError as exc:
            # Only a model with required fields besides its key gets here.
            refusal.violations.extend(violations(exc, at))
            refusal.rejected.append((at, kept(raw)))
            continue
        if not parsed.key_found():
            refusal.without_key(parsed, at)
            refusal.rejected.append((at, kept(raw)))
            malformed = malformed_key(parsed, raw, what)
            if malformed is not None:
                refusal.malformed[at] = ItemWarning(at + malformed.pointer, malformed.expected)
            continue
        found.append((parsed, raw, at))
    return found


def malformed_key(model: Tolerant, raw: dict[str, Any], what: str) -> ItemWarning | None:
    """The flag at a key field of ``raw`` that ``model`` could not read as its key, though
    it holds one as a reference is found (text, or an integer: ``pixrecon events --ref``):
    a 31-character ``endToEndId``, one with a hyphen. Such an object is kept whole, not
    refused: the provider disables a webhook whose deliveries keep failing, and the key
    finds it. ``None`` when no key field holds anything readable (absent, ``null``, an
    object). Only ever asked of an object without its key, so the common one pays nothing."""
    found = {w.pointer: w.expected for w in model.warnings()}
    for name in type(model).KEYS:
        given = name if raw.get(name) not in (None, "") else _respelling(raw, name)
        if given is None or ref_text(raw[given]) is None:
            continue
        expected = found.get(pointer([name]), "the business key as documented")
        return ItemWarning(pointer([given]), f"{expected}: the key of {what}, kept whole for it")
    return None


def _respelling(raw: dict[str, Any], name: str) -> str | None:
    wanted = spelling(name)
    return next(
        (
            given
            for given, value in raw.items()
            if isinstance(given, str) and spelling(given) == wanted and value not in (None, "")
        ),
        None,
    )


def new_item(
    kind: ItemKind, key: str, payload: Any, warnings: Sequence[ItemWarning] = ()
) -> NewItem:
    text = dump_json(payload)
    # Mended text always holds U+FFFD: without one in the payload's JSON there is nothing
    # to find, and the walk over every value is skipped (nearly every item).
    mended = mended_warnings(payload) if "\ufffd" in text else []
    return NewItem(
        kind=kind.value,
        key=key,
        payload=text,
        warnings=tuple(_unique([*warnings, *mended])),
        refs=ref_values(item_refs(kind.value, payload)),
    )


def _unique(warnings: Sequence[ItemWarning]) -> list[ItemWarning]:
    seen: dict[str, ItemWarning] = {}
    for warning in warnings:
        seen.setdefault(warning.pointer, warning)
    return list(seen.values())


def fingerprint(raw: Any) -> str:
    return hashlib.sha256(dump_json(raw).encode()).hexdigest()[:32]


def unsupported_item(label: str, raw: Any, warning: ItemWarning | None = None) -> NewItem:
    """Kept whole and shown; identical repeats still dedupe on the fingerprint."""
    # ``fullmatch``: ``$`` would let a final newline into the key.
    name = label.upper() if _LABEL.fullmatch(label.upper()) else "UNKNOWN"
    item = new_item(
        ItemKind.UNSUPPORTED,
        f"unsupported:{name}:{fingerprint(raw)}",
        raw,
        [warning] if warning is not None else [],
    )
    return replace(item, status=ItemStatus.UNSUPPORTED.value)
