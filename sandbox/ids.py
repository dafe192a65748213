"""Identifiers in the formats the Pix arrangement uses, from a seedable random source.

A seeded ``random.Random`` keeps a whole sandbox run reproducible; uniqueness is the
caller's job (the ledger retries on the astronomically rare collision).
"""

from __future__ import annotations

import random
import re
import string
from datetime import UTC, datetime
from typing import Final

_ALPHANUMERIC: Final = string.ascii_letters + string.digits
_ISPB_RE: Final = re.compile(r"\d{8}")

END_TO_END_ID_RE: Final = re.compile(r"[ED]\d{8}\d{12}[A-Za-z0-9]{11}")
TXID_RE: Final = re.compile(r"[A-Za-z0-9]{1,35}")


def _alphanumerics(rng: random.Random, length: int) -> str:
    return "".join(rng.choice(_ALPHANUMERIC) for _ in range(length))


def _spi_id(prefix: str, ispb: str, at: datetime, rng: random.Random) -> str:
    if not _ISPB_RE.fullmatch(ispb):
        raise ValueError(f"ISPB must be 8 digits, got {ispb!r}")
    if at.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    return prefix + ispb + at.astimezone(UTC).strftime("%Y%m%d%H%M") + _alphanumerics(rng, 11)


def new_end_to_end_id(ispb: str, at: datetime, rng: random.Random) -> str:
    """``E`` + payer PSP's ISPB + ``yyyyMMddHHmm`` (UTC) + 11 alphanumerics: 32 chars."""
    return _spi_id("E", ispb, at, rng)


def new_return_id(ispb: str, at: datetime, rng: random.Random) -> str:
    """A refund's ``rtrId``: the same layout as an endToEndId, prefixed ``D``."""
    return _spi_id("D", ispb, at, rng)


def new_txid(rng: random.Random, length: int = 32) -> str:
    # 26-35 characters is what the spec asks of txids the merchant creates for charges.
    if not 1 <= length <= 35:
        raise ValueError("a txid has 1 to 35 characters")
    return _alphanumerics(rng, length)


def new_cpf(rng: random.Random) -> str:
    """A CPF with valid check digits, so validators downstream accept it."""
    digits = [rng.randrange(10) for _ in range(9)]
    for weight_start in (10, 11):
        total = sum(d * w for d, w in zip(digits, range(weight_start, 1, -1), strict=True))
        remainder = total * 10 % 11
        digits.append(0 if remainder == 10 else remainder)
    return "".join(map(str, digits))
