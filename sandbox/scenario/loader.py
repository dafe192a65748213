"""Read a scenario file and explain, line by line, what is wrong with a bad one."""

from __future__ import annotations

import json
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from sandbox.scenario.model import Scenario

# Lists whose items are chosen by a tag (``type``, ``kind``, ``fault``): pydantic puts the
# tag in the error location, where it reads better as "(refund)" than as a field name.
_TAGGED_LISTS = frozenset({"events", "charges"})


class ScenarioError(ValueError):
    """A scenario that cannot be read or cannot happen; ``problems`` lists every reason."""

    def __init__(self, source: str, problems: Sequence[str]) -> None:
        self.source = source
        self.problems = list(problems)
        if len(self.problems) == 1:
            # One reason, one line: a missing file is no list of problems.
            super().__init__(f"{source}: invalid scenario: {self.problems[0]}")
            return
        listed = "\n".join(f"  - {problem}" for problem in self.problems)
        super().__init__(f"{source}: invalid scenario\n{listed}")


def _location(loc: tuple[int | str, ...]) -> str:
    text = ""
    for index, part in enumerate(loc):
        previous = loc[index - 1] if index else None
        tagged = (
            isinstance(previous, int) and index >= 2 and loc[index - 2] in _TAGGED_LISTS
        ) or previous == "delivery"
        if isinstance(part, int):
            text += f"[{part}]"
        elif tagged:
            text += f" ({part})"
        else:
            text += f".{part}" if text else str(part)
    return text or "(top level)"


def _describe(error: ErrorDetails) -> str:
    loc = tuple(error["loc"])
    kind = error["type"]
    if kind == "extra_forbidden":
        return f"{_location(loc[:-1])}: unknown key {loc[-1]!r}"
    if kind == "missing":
        return f"{_location(loc[:-1])}: missing key {loc[-1]!r}"
    message = error["msg"].removeprefix("Value error, ")
    if kind == "string_pattern_mismatch":
        message = f"{error['input']!r} does not match {error.get('ctx', {}).get('pattern')}"
    # Cross-reference errors already name their location (``events[4] (refund): ...``).
    if not loc:
        return message
    return f"{_location(loc)}: {message}"


def parse_scenario(data: Any, *, source: str = "scenario") -> Scenario:
    """Validate already-parsed JSON (numbers should be ``Decimal``: ``parse_float``)."""
    if not isinstance(data, dict):
        raise ScenarioError(source, ["the scenario must be a JSON object"])
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(source, [_describe(error) for error in exc.errors()]) from None


def loads_scenario(text: str, *, source: str = "scenario") -> Scenario:
    try:
        # Exact amounts: a JSON number such as 150.10 must not pass through float.
        data = json.loads(text, parse_float=Decimal)
    except json.JSONDecodeError as exc:
        raise ScenarioError(
            source, [f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"]
        ) from None
    return parse_scenario(data, source=source)


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file; ``ScenarioError`` says what is wrong and where."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(str(path), ["no such file"]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(str(path), [f"cannot read it: {exc}"]) from None
    return loads_scenario(text, source=str(path))
