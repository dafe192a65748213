"""Masking of personal data (CPF/CNPJ, names) before anything reaches a log line."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_DIGITS = re.compile(r"\D")
# CPF (11 digits) and CNPJ (14 digits), with or without punctuation, inside free text;
# people typing one into a note also separate its groups with spaces ("123 456 789 09").
# Digits followed by decimals ("10000000000.00") are an amount, not a document.
_DOCUMENT_IN_TEXT = re.compile(
    r"(?<!\d)(\d{3}[. ]?\d{3}[. ]?\d{3}[- ]?\d{2}"
    r"|\d{2}[. ]?\d{3}[. ]?\d{3}[/ ]?\d{4}[- ]?\d{2})(?!\d)(?![.,]\d)"
)
SENSITIVE_KEYS = frozenset(
    {"cpf", "cnpj", "document", "nome", "name", "payer_document", "payer_name", "chave", "pixkey"}
)


# Fields of a payload that may hold a person's data beyond the ones the logs mask.
_MORE_SENSITIVE = frozenset({"email", "telefone", "phone", "number", "infopagador"})

_MASKED_DOCUMENT = re.compile(r"\*{9,12}[0-9]{2}")


def mask_document(value: str) -> str:
    """Keep the shape and the last two digits; enough to tell records apart in a log.
    Idempotent: a document masked already (kept so by retention) stays as it is."""
    if _MASKED_DOCUMENT.fullmatch(value):
        return value
    digits = _DIGITS.sub("", value)
    if len(digits) <= 2:
        return "*" * len(digits)
    return "*" * (len(digits) - 2) + digits[-2:]


def mask_name(value: str) -> str:
    return " ".join(part[:1] + "*" * (len(part) - 1) for part in value.split())


def mask_text(value: str) -> str:
    return _DOCUMENT_IN_TEXT.sub(lambda m: mask_document(m.group(0)), value)


def mask_value(key: str, value: Any) -> Any:
    lowered = key.lower()
    if isinstance(value, Mapping):
        return {k: mask_value(str(k), v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [mask_value(key, v) for v in value]
    if isinstance(value, str):
        if lowered in {"nome", "name", "payer_name"}:
            return mask_name(value)
        if lowered in SENSITIVE_KEYS:
            return mask_document(value) if _DIGITS.sub("", value) else mask_name(value)
        return mask_text(value)
    return value


def mask_payload(value: Any, key: str = "") -> Any:
    """A stored payload fit to show a person (the dashboard, ``pixrecon events show``):
    its shape and every other field as they came, documents, names and contacts masked."""
    if isinstance(value, dict):
        return {k: mask_payload(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_payload(v, key) for v in value]
    if isinstance(value, str) and key.lower() in _MORE_SENSITIVE:
        return mask_value("document" if any(c.isdigit() for c in value) else "name", value)
    if key.lower() in SENSITIVE_KEYS:
        return mask_value(key, value)
    return mask_text(value) if isinstance(value, str) else value
