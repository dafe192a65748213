"""Standard Webhooks signatures (https://www.standardwebhooks.com/), for providers that sign.

``webhook-signature`` carries space-separated ``v1,<base64 HMAC-SHA256>`` values over
``"{webhook-id}.{webhook-timestamp}.{body}"``; several appear while the sender rotates
its secret, and we may accept several secrets while we rotate ours.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from collections.abc import Callable, Mapping, Sequence

from receiver.problems import Problem

SECRET_PREFIX = "whsec_"  # noqa: S105 (the spec's prefix, not a secret)
ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"


def decode_secret(value: str) -> bytes:
    """``whsec_<base64>`` is the spec's form; anything else is taken as the raw key."""
    if value.startswith(SECRET_PREFIX):
        return base64.b64decode(value[len(SECRET_PREFIX) :], validate=True)
    return value.encode()


def signature(key: bytes, message_id: str, timestamp: str, body: bytes) -> bytes:
    signed = f"{message_id}.{timestamp}.".encode() + body
    return hmac.new(key, signed, hashlib.sha256).digest()


def _presented(header: str) -> list[bytes]:
    found: list[bytes] = []
    for token in header.split():
        version, _, encoded = token.partition(",")
        # Other versions (v1a is asymmetric) are not ours to verify; skipping them lets a
        # sender send both.
        if version != "v1":
            continue
        try:
            found.append(base64.b64decode(encoded, validate=True))
        except (binascii.Error, ValueError):
            continue
    return found


class StandardWebhooks:
    def __init__(
        self,
        secrets: Sequence[str],
        tolerance_seconds: int,
        errors: list[str],
        clock: Callable[[], float] = time.time,
    ) -> None:
        keys: list[bytes] = []
        for position, secret in enumerate(secrets, start=1):
            try:
                key = decode_secret(secret)
            except (binascii.Error, ValueError):
                # Never echo the value: it is a secret even when malformed.
                errors.append(f"PIXRECON_HMAC_SECRETS: secret #{position} is not valid base64")
                continue
            if not key:
                errors.append(f"PIXRECON_HMAC_SECRETS: secret #{position} is empty")
                continue
            keys.append(key)
        self._keys = tuple(keys)
        self.tolerance_seconds = tolerance_seconds
        self._clock = clock

    def verify(self, headers: Mapping[str, str], body: bytes) -> None:
        message_id = headers.get(ID_HEADER)
        timestamp = headers.get(TIMESTAMP_HEADER)
        header = headers.get(SIGNATURE_HEADER)
        missing = [
            name
            for name, value in (
                (ID_HEADER, message_id),
                (TIMESTAMP_HEADER, timestamp),
                (SIGNATURE_HEADER, header),
            )
            if not value
        ]
        if missing or message_id is None or timestamp is None or header is None:
            raise Problem(401, "unauthenticated", f"missing {', '.join(missing)} header")
        try:
            sent_at = int(timestamp.strip())
        except ValueError:
            raise Problem(
                401, "invalid-signature", f"{TIMESTAMP_HEADER} must be unix seconds"
            ) from None
        # Bounding the age makes a captured delivery worthless after the tolerance.
        now = self._clock()
        if abs(now - sent_at) > self.tolerance_seconds:
            # A sender that signs in milliseconds is off by centuries, not by a clock's
            # drift: say which, or its operator looks for a clock problem.
            unit = (
                f" (it reads as milliseconds: {TIMESTAMP_HEADER} is unix seconds)"
                if abs(now - sent_at // 1000) <= self.tolerance_seconds
                else ""
            )
            raise Problem(
                401,
                "stale-signature",
                f"{TIMESTAMP_HEADER} is more than {self.tolerance_seconds} s from our clock{unit}",
            )
        presented = _presented(header)
        if not presented:
            raise Problem(401, "invalid-signature", f"no v1 signature in {SIGNATURE_HEADER}")
        # The timestamp is signed as sent (not re-formatted), or a valid signature would fail.
        expected = [signature(key, message_id, timestamp, body) for key in self._keys]
        matched = False
        for candidate in presented:
            for digest in expected:
                matched |= hmac.compare_digest(candidate, digest)
        if not matched:
            raise Problem(401, "invalid-signature", "no signature matches")
