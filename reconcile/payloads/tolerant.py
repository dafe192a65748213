"""Models that keep what they cannot read (docs/design.md §4, tolerant reader).

A field that does not parse is left out of the model — the raw payload still holds it — and
reported as a warning: a JSON pointer and what was expected, never the value, which may be
personal data. Only an item's business key is indispensable; each model names the fields
that make it (``KEYS``), and the JSON schema it publishes says exactly that: the key is
required and checked, everything else is documented and accepted whatever its shape.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar, NamedTuple, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    ModelWrapValidatorHandler,
    PrivateAttr,
    ValidationError,
    model_validator,
)
from pydantic_core import ErrorDetails

from reconcile.timeutil import BUSINESS_TZ, parse_timestamp


class ItemWarning(NamedTuple):
    """A field read otherwise than documented: where (a JSON pointer into the item's
    payload) and what was expected there."""

    pointer: str
    expected: str

    def as_json(self) -> dict[str, str]:
        return {"pointer": self.pointer, "expected": self.expected}


def pointer(parts: Iterable[str | int]) -> str:
    """RFC 6901: ``~`` and ``/`` inside a name are escaped."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


KEY_UNPADDED = "a business key without surrounding whitespace (read without it)"


# What an array field sent as its one element, an object, is flagged with.
ONE_AS_ARRAY = "an array (a single object, read as an array of one)"


def key_renamed(documented: str) -> str:
    return f"the business key under its documented name, {documented} (read from this one)"


# Invisible characters a copy and paste leaves around an id, which str.strip() keeps: a
# byte order mark, zero-width spaces and joiners, the word joiner.
_INVISIBLE = "\ufeff\u200b\u200c\u200d\u2060"


def _unpadded(text: str) -> str:
    return text.strip().strip(_INVISIBLE).strip()


# What a field holding no value reads as: absent, ``null`` or empty.
_SAYS_NOTHING: tuple[object, ...] = (None, "")


def spelling(name: str) -> str:
    """A field name as senders vary it: case, underscores, whitespace."""
    return "".join(name.split()).replace("_", "").casefold()


def _always(_value: Any) -> bool:
    return True


@dataclass(frozen=True)
class Expect:
    """What a field should hold. A value that parsed but is not what the provider documents
    (an unknown status, an unreadable date) is kept as it is and flagged."""

    what: str
    ok: Callable[[Any], bool] = field(default=_always)
    required: bool = False
    nearly: Callable[[Any], str | None] | None = None
    """For a value ``ok`` accepts that was read by a guess: what was expected instead."""
    meant: Callable[[Any], Any] | None = None
    """The documented value a value written otherwise stands for (a status in lower case,
    or padded): the model takes it, and the field is flagged."""

    def problem(self, value: Any) -> str | None:
        """What was expected instead of ``value`` (present), ``None`` when it is fine."""
        if not self.ok(value):
            return self.what
        return self.nearly(value) if self.nearly is not None else None


def one_of(*values: str, required: bool = False) -> Expect:
    allowed = frozenset(values)
    # ``devolvido`` or `` DEVOLVIDO`` can mean nothing but DEVOLVIDO; kept as written, it
    # would rank as no known status and key a second item for the same fact.
    by_form = {value.casefold(): value for value in values}

    def meant(value: Any) -> Any:
        return by_form.get(value.strip().casefold(), value) if isinstance(value, str) else value

    return Expect(
        "one of " + ", ".join(values), lambda value: value in allowed, required, meant=meant
    )


# Far from the ends of datetime's range: arithmetic further on (time zones, deadlines)
# cannot overflow, and no provider means an instant outside them.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9000, 1, 1, tzinfo=UTC)


WITHOUT_OFFSET = "an RFC 3339 date-time with its offset (read as São Paulo time)"


def _local_time(raw: object) -> datetime | None:
    """A date-time (or a date alone) written without an offset, as written; ``None`` for
    anything else."""
    if not isinstance(raw, str):
        return None
    try:
        parsed = datetime.fromisoformat(raw.strip())
    except ValueError:
        return None
    return parsed if parsed.tzinfo is None else None


def read_timestamp(raw: object) -> datetime | None:
    """``parse_timestamp``, with instants nobody means (year 1, year 9999) unreadable too.

    Every time of a payload is read here, by the receiver and the workers alike. The BCB
    requires an offset; a Brazilian provider that leaves it out means São Paulo's time,
    and reading it as UTC would move a Pix of the evening into the next business day."""
    try:
        local = _local_time(raw)
        when = (
            local.replace(tzinfo=BUSINESS_TZ).astimezone(UTC)
            if local is not None
            else parse_timestamp(raw)
        )
    except OverflowError:
        return None
    return when if when is not None and EARLIEST <= when < LATEST else None


def _is_timestamp(value: Any) -> bool:
    return read_timestamp(value) is not None


NOT_RFC3339 = "an RFC 3339 date-time, such as 2026-11-22T14:30:00-03:00 (read leniently)"
# What RFC 3339 writes (section 5.6; a space for the T, as its note allows): anything else
# a reader accepts (an offset without its minutes, "+0000", no seconds) was read by a guess.
_RFC3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})"
)


def _without_offset(value: Any) -> str | None:
    if _local_time(value) is not None:
        return WITHOUT_OFFSET
    if isinstance(value, str) and _RFC3339.fullmatch(value.strip()) is None:
        return NOT_RFC3339
    return None


def timestamp(*, required: bool = False) -> Expect:
    return Expect("an RFC 3339 date-time", _is_timestamp, required, _without_offset)


def _expected(problem: ErrorDetails) -> str:
    """Pydantic's complaint as an expectation; built from the type and the constraint only,
    so the offending value never leaks."""
    kind, ctx = problem["type"], problem.get("ctx") or {}
    if kind in ("string_type", "string_sub_type"):
        return "a string"
    if kind == "string_too_long":
        return f"a string of at most {ctx.get('max_length')} characters"
    if kind == "string_too_short":
        return f"a string of at least {ctx.get('min_length')} characters"
    if kind in ("too_short", "too_long"):
        # A length checked after a validator reshaped the value (an id read from a number).
        bound = "at least" if kind == "too_short" else "at most"
        size = ctx.get("min_length") if kind == "too_short" else ctx.get("max_length")
        unit = "character" if ctx.get("field_type") == "Value" else "item"
        return f"{bound} {size} {unit}{'' if size == 1 else 's'}"
    if kind == "string_pattern_mismatch":
        return f"a string matching {ctx.get('pattern')}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return "an object"
    if kind == "list_type":
        return "an array"
    if kind.startswith("int_"):
        return "an integer"
    if kind.startswith(("float_", "decimal_")):
        return "a number"
    if kind.startswith("bool_"):
        return "true or false"
    if kind == "value_error":
        return str(problem["msg"]).removeprefix("Value error, ")
    return "another shape"


def _holds(node: Any, part: str | int) -> bool:
    if isinstance(node, dict):
        return isinstance(part, str) and part in node
    return isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)


def _drop(data: dict[str, Any], loc: tuple[str | int, ...]) -> list[str | int] | None:
    """Remove what ``loc`` points at (as far as the data has it) and return its path; a
    list element becomes ``{}`` instead, so the indexes after it still point where they
    did. ``None`` when nothing could be removed."""
    path: list[str | int] = []
    node: Any = data
    for part in loc:
        if not _holds(node, part):
            break
        node = node[part]
        path.append(part)
    while path:
        parent: Any = data
        for part in path[:-1]:
            parent = parent[part]
        last = path[-1]
        if isinstance(parent, dict):
            del parent[last]
            return path
        if parent[last] != {}:
            parent[last] = {}
            return path
        # An empty object still fails: the list cannot hold it, so the list goes.
        path.pop()
    return None


def _not_null(schema: dict[str, Any]) -> dict[str, Any]:
    branches = [b for b in schema.get("anyOf", ()) if b != {"type": "null"}]
    if not branches:
        return schema
    rest = {k: v for k, v in schema.items() if k not in ("anyOf", "default")}
    return {**rest, **branches[0]} if len(branches) == 1 else {**rest, "anyOf": branches}


def _anything(schema: dict[str, Any], expect: Expect | None) -> dict[str, Any]:
    described = schema.get("description") or (f"expected: {expect.what}" if expect else None)
    documented = {
        k: v for k, v in _not_null(schema).items() if k not in ("description", "title", "default")
    }
    loose: dict[str, Any] = {"anyOf": [documented, {}]} if documented else {}
    if described:
        flagged = " (any other shape is kept and flagged)" if documented else ""
        loose["description"] = described + flagged
    return loose


def _document(schema: dict[str, Any], cls: type[BaseModel]) -> None:
    """The published schema says what is accepted: the key strictly, the rest loosely."""
    if not issubclass(cls, Tolerant):
        return
    properties: dict[str, Any] = schema.get("properties", {})
    strict = {name: _not_null(properties[name]) for name in cls.KEYS if name in properties}
    for name, prop in list(properties.items()):
        if name in cls.EXACT:
            continue
        if name in strict and not cls.ANY_KEY:
            properties[name] = strict[name]
        else:
            properties[name] = _anything(prop, cls.EXPECT.get(name))
    if cls.ANY_KEY:
        schema["anyOf"] = [
            {"required": [name], "properties": {name: prop}} for name, prop in strict.items()
        ]
    elif strict:
        schema["required"] = list(strict)


class Tolerant(BaseModel):
    """Unknown fields are kept (the provider adds fields without notice); fields that do
    not parse are dropped from the model and reported by ``warnings()``."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, json_schema_extra=_document)

    KEYS: ClassVar[tuple[str, ...]] = ()
    """The fields that make the item's business key (docs/design.md §4)."""
    ANY_KEY: ClassVar[bool] = False
    """One of ``KEYS`` is enough (else every one is needed)."""
    EXPECT: ClassVar[Mapping[str, Expect]] = {}
    EXACT: ClassVar[tuple[str, ...]] = ()
    """Fields whose schema is published as generated (they hold items of their own)."""
    ONE_OR_MANY: ClassVar[tuple[str, ...]] = ()
    """Array fields some senders write as their single element, an object: read as an
    array of one and flagged. Dropped as unreadable, the object's money would count for
    nothing, though it is as readable as an array's."""

    _unread: tuple[ItemWarning, ...] = PrivateAttr(default=())
    _singles: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _keep_what_cannot_be_read(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        data, trimmed = cls._trimmed_keys(data)
        singles: tuple[str, ...] = ()
        if cls.ONE_OR_MANY:
            data, singles = cls._singles_as_arrays(data)
        try:
            model = handler(data)
            dropped: list[ItemWarning] = []
        except ValidationError as first:
            # Not an object at all: the container holding it decides what to do.
            if not isinstance(data, dict):
                raise
            model, dropped = cls._without_unreadable(data, handler, first)
        dropped.extend(model._without_nul())
        unread = {w.pointer for w in dropped}
        # A key unreadable even without its whitespace is flagged for that alone.
        dropped.extend(w for w in trimmed if w.pointer not in unread)
        if singles:
            model._singles = singles
            dropped.extend(ItemWarning(pointer([name]), ONE_AS_ARRAY) for name in singles)
        flagged = model._expectations({w.pointer for w in dropped})
        if dropped or flagged:
            model._unread = (*dropped, *flagged)
        return model

    @classmethod
    def _trimmed_keys(cls, data: Any) -> tuple[Any, list[ItemWarning]]:
        """``data`` with the whitespace around its key fields stripped (a copy: the raw
        payload is kept as it came). Senders pad ids or end them with a newline; the key is
        what is between, and a retry without the padding is the same item."""
        if not isinstance(data, dict) or not cls.KEYS:
            return data, []
        warnings: list[ItemWarning] = []
        if any(data.get(name) in _SAYS_NOTHING for name in cls.KEYS):
            data, warnings = cls._renamed_keys(data)
        padded = [
            name
            for name in cls.KEYS
            if isinstance(data.get(name), str) and data[name] != _unpadded(data[name])
        ]
        if not padded:
            return data, warnings
        trimmed = {**data, **{name: _unpadded(data[name]) for name in padded}}
        return trimmed, [
            *warnings,
            *(ItemWarning(pointer([name]), KEY_UNPADDED) for name in padded),
        ]

    @classmethod
    def _singles_as_arrays(cls, data: Any) -> tuple[Any, tuple[str, ...]]:
        """``data`` with each ``ONE_OR_MANY`` field sent as one object made an array of it
        (a copy: the raw payload is kept as it came), and the names of those fields."""
        if not isinstance(data, dict):
            return data, ()
        singles = tuple(name for name in cls.ONE_OR_MANY if isinstance(data.get(name), dict))
        if not singles:
            return data, ()
        return {**data, **{name: [data[name]] for name in singles}}, singles

    @classmethod
    def _renamed_keys(cls, data: dict[str, Any]) -> tuple[dict[str, Any], list[ItemWarning]]:
        """A key field missing under its documented name but present under another spelling
        of it (``endtoendid``, ``EndToEndID``, ``end_to_end_id``) is read from there: the
        key is as readable as ever, and refusing the delivery would have the provider
        disable the webhook. Only when the documented name is absent or says nothing
        (``null``, ``""``), so the common delivery pays one look-up per key field."""
        wanted = {spelling(name): name for name in cls.KEYS if data.get(name) in _SAYS_NOTHING}
        found = {
            wanted[spelling(given)]: given
            for given in data
            if isinstance(given, str)
            and given not in cls.KEYS
            and spelling(given) in wanted
            and data[given] not in _SAYS_NOTHING
        }
        if not found:
            return data, []
        renamed = {**data, **{name: data[given] for name, given in found.items()}}
        return renamed, [
            ItemWarning(pointer([given]), key_renamed(name)) for name, given in found.items()
        ]

    @classmethod
    def _without_unreadable(
        cls, data: dict[str, Any], handler: ModelWrapValidatorHandler[Self], first: ValidationError
    ) -> tuple[Self, list[ItemWarning]]:
        data = copy.deepcopy(data)
        dropped: dict[str, ItemWarning] = {}
        error = first
        while True:
            progressed = False
            for problem in error.errors(include_url=False, include_input=False):
                path = _drop(data, problem["loc"])
                if path is None:
                    continue
                progressed = True
                at = pointer(path)
                expect = cls.EXPECT.get(str(path[0])) if len(path) == 1 else None
                dropped.setdefault(
                    at, ItemWarning(at, expect.what if expect else _expected(problem))
                )
            if not progressed:
                # A required field (of a model that has some) is missing or unreadable.
                raise first
            try:
                return handler(data), list(dropped.values())
            except ValidationError as again:
                error = again

    def _without_nul(self) -> list[ItemWarning]:
        """Text with NUL characters parses, but no database column can hold it."""
        found = []
        fields = type(self).__pydantic_fields__
        # The instance's ``__dict__`` holds exactly its fields' values (extra fields live
        # elsewhere): read there, a model of ten fields costs a few µs less per item.
        for name, value in list(self.__dict__.items()):
            if isinstance(value, str) and "\x00" in value and not fields[name].is_required():
                setattr(self, name, None)
                found.append(ItemWarning(pointer([name]), "text without NUL characters"))
        return found

    def _expectations(self, already: set[str]) -> list[ItemWarning]:
        found = []
        for name, expect in type(self).EXPECT.items():
            at = pointer([name])
            if at in already:
                continue
            value = getattr(self, name, None)
            if value is not None and expect.meant is not None:
                documented = expect.meant(value)
                if documented != value:
                    setattr(self, name, documented)
                    found.append(ItemWarning(at, f"{expect.what} (read as {documented})"))
                    continue
            problem = expect.problem(value) if value is not None else None
            if value is None and expect.required:
                problem = expect.what
            if problem is not None:
                found.append(ItemWarning(at, problem))
        return found

    def warnings(self, at: str = "") -> list[ItemWarning]:
        """Every field read otherwise than documented, here and in nested models."""
        # Read from pydantic's dict of private values: ``self._unread`` goes through
        # ``BaseModel.__getattr__``, a few µs for every item read.
        private = self.__pydantic_private__
        unread: tuple[ItemWarning, ...] = private.get("_unread", ()) if private else ()
        found = [ItemWarning(at + w.pointer, w.expected) for w in unread]
        singles: tuple[str, ...] = private.get("_singles", ()) if private else ()
        for name, value in self.__dict__.items():
            if isinstance(value, Tolerant):
                found.extend(value.warnings(at + pointer([name])))
            elif isinstance(value, list):
                for index, entry in enumerate(value):
                    if isinstance(entry, Tolerant):
                        # A single object read as an array of one is where it was sent.
                        where = pointer([name]) if name in singles else pointer([name, index])
                        found.extend(entry.warnings(at + where))
        return found

    def key_found(self) -> bool:
        present = [getattr(self, name) not in (None, "") for name in type(self).KEYS]
        return any(present) if type(self).ANY_KEY else all(present)

    def missing_key(self) -> str:
        names = type(self).KEYS
        if type(self).ANY_KEY and len(names) > 1:
            listed = ", ".join(names[:-1]) + f" or {names[-1]}"
            return f"one of {listed} is required: it is the item's business key"
        return f"{' and '.join(names)} is required: it is the item's business key"
