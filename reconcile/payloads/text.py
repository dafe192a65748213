"""Text that JSON can carry but no database can: a lone UTF-16 surrogate (``"\\ud800"``).

JavaScript senders write one when they cut a string in the middle of an emoji. It is JSON
syntax but no character, so neither UTF-8 nor a PostgreSQL text column can hold it; the
delivery is still a notification, and refusing it would count towards the provider
disabling the webhook. Each one becomes U+FFFD where the document enters, before any model
or key sees it, and the item that ends up holding that text says where it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from reconcile.payloads.tolerant import ItemWarning, pointer

SURROGATE_REPLACED = "Unicode text (an unpaired UTF-16 surrogate was replaced by U+FFFD)"

_SURROGATE = re.compile("[\ud800-\udfff]")
# A surrogate written as a JSON escape; a pair matches too, and costs only a needless walk.
_ESCAPED = re.compile(r"\\u[dD][89a-fA-F]")
_ESCAPED_BYTES = re.compile(_ESCAPED.pattern.encode())


class Mended(str):
    """Text a lone surrogate was replaced in. The mark travels with the string itself, so
    whichever item's payload ends up holding it can flag it at its own JSON pointer (the
    same text sits at another place in the body than in a refund's item, or in one of an
    accounts array's)."""

    __slots__ = ()


def may_hold_surrogates(text: str | bytes) -> bool:
    """Whether JSON ``text`` can parse into a lone surrogate: a cheap look before a walk.
    As bytes (an HTTP answer), only as an escape: UTF-8 cannot encode a raw surrogate."""
    if isinstance(text, bytes):
        return _ESCAPED_BYTES.search(text) is not None
    return _ESCAPED.search(text) is not None or _SURROGATE.search(text) is not None


def _mend(text: str) -> str:
    if _SURROGATE.search(text) is None:
        return text
    # UTF-16 round trip: a pair becomes its character, each lone half U+FFFD.
    mended = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return Mended(mended) if mended.count("\ufffd") > text.count("\ufffd") else mended


def mend_surrogates(document: Any) -> Any:
    """``document`` with every lone surrogate, in values and in names, replaced by U+FFFD
    (as ``Mended`` text). Recursive: callers bound the document's depth first."""
    if isinstance(document, str):
        return _mend(document)
    if isinstance(document, dict):
        return {_mend(name): mend_surrogates(value) for name, value in document.items()}
    if isinstance(document, list):
        return [mend_surrogates(value) for value in document]
    return document


def _mended_at(value: Any, path: list[str | int]) -> Iterator[list[str | int]]:
    if isinstance(value, Mended):
        yield path
    elif isinstance(value, dict):
        for name, entry in value.items():
            if isinstance(name, Mended):
                yield [*path, name]
            yield from _mended_at(entry, [*path, name])
    elif isinstance(value, list):
        for index, entry in enumerate(value):
            yield from _mended_at(entry, [*path, index])


def mended_warnings(payload: Any) -> list[ItemWarning]:
    """Where ``payload`` holds text whose surrogates were replaced."""
    return [ItemWarning(pointer(path), SURROGATE_REPLACED) for path in _mended_at(payload, [])]


# Deeply nested JSON is an attack on the parser, not a notification; a text inside a body
# is no licence to nest deeper.
MAX_JSON_DEPTH = 32


def json_depth(value: Any, limit: int) -> int:
    """How deep ``value`` nests, counted no further than one level past ``limit``."""
    depth = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, level = stack.pop()
        depth = max(depth, level)
        if depth > limit:
            return depth
        if isinstance(node, dict):
            stack.extend((child, level + 1) for child in node.values())
        elif isinstance(node, list):
            stack.extend((child, level + 1) for child in node)
    return depth


def held_json(text: str) -> dict[str, Any] | list[Any] | None:
    """The object or array a JSON string holds as its text (a sender that encoded part of
    its body once more, ``"data": "{\\"id\\": …}"``), its numbers read as Decimal as a
    body's are; ``None`` when it holds none, or nests deeper than a body may."""
    if text.lstrip()[:1] not in ("{", "["):
        return None
    try:
        document = json.loads(text, parse_float=Decimal, parse_constant=str)
    except (ValueError, RecursionError):
        return None
    if not isinstance(document, dict | list):
        return None
    if json_depth(document, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        return None
    held: dict[str, Any] | list[Any] = (
        mend_surrogates(document) if may_hold_surrogates(text) else document
    )
    return held
