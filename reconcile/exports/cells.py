"""What a cell may hold once it leaves pixrecon: dates and times as values (a report read
back from JSON holds them as ISO text), and no personal data in the clear — documents and
names masked, CPF/CNPJ inside free text masked, identifiers left as they are."""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any

from reconcile.masking import mask_document, mask_name, mask_text

# References and ids: never altered (an 11-digit run inside a txid is not a CPF).
IDENTIFIERS = frozenset(
    {
        "key",
        "ref",
        "txid",
        "end_to_end_id",
        "original_end_to_end_id",
        "idempotency_key",
        "infraction_id",
        "entry_id",
        "fitid",
    }
)
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?([+-]\d{2}:\d{2}|Z)$")


def typed(value: Any) -> Any:
    """An ISO date or an ISO time with an offset, as text, becomes a ``date`` or an aware
    ``datetime``; everything else stays as it is."""
    if not isinstance(value, str):
        return value
    try:
        if _ISO_DATE.match(value):
            return date.fromisoformat(value)
        if _ISO_TIME.match(value):
            return datetime.fromisoformat(value)
    except ValueError:
        return value
    return value


def masked(column: str, value: Any) -> Any:
    """``value`` fit to leave: a document or a name masked, any other text with the
    CPF/CNPJ it may contain masked. Masking is idempotent (a value masked already, by
    retention, stays as it is); an asterisk in a value proves nothing, for a sender may
    write one (``529.982.247-2*``, ``Zacarias*``)."""
    if not isinstance(value, str) or column in IDENTIFIERS:
        return value
    if column.endswith("_document"):
        return mask_document(value)
    if column.endswith("_name"):
        return mask_name(value)
    return mask_text(value)
