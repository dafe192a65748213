"""JSON with exact amounts: a ``Decimal`` is written as a JSON number, never via float.

The provider sends amounts as numbers (``"amount": 250.5``); writing them from ``Decimal``
digits keeps the sandbox exact and makes clients prove they parse numbers exactly.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from starlette.responses import JSONResponse


def dumps(value: Any) -> str:
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"not a finite amount: {value}")
        return format(value, "f")
    if isinstance(value, float):
        raise TypeError("money is never float; use Decimal")
    if isinstance(value, dict):
        items = (json.dumps(str(k), ensure_ascii=False) + ":" + dumps(v) for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def loads(raw: bytes) -> Any:
    """Parse a request body; numbers with a fraction become ``Decimal``."""
    return json.loads(raw, parse_float=Decimal)


class ExactJSONResponse(JSONResponse):
    def render(self, content: Any) -> bytes:
        return dumps(content).encode("utf-8")
