"""Password hashes for ``PIXRECON_DASHBOARD_USERS``: scrypt from the standard library, with
a random salt, in one self-describing string (``scrypt.N.r.p.SALT.HASH``, base64url).

The string holds no ``$``, ``,`` or ``:`` on purpose: shells and Compose files expand
``$``, and commas and colons separate the users and their names in the setting."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

SCHEME = "scrypt"
# 16 MiB and about 50 ms a hash on one core: slow for a guesser, quick for one sign-in.
N, R, P = 2**14, 8, 1
SALT_BYTES = 16
KEY_BYTES = 32
_MAXMEM = 64 * 1024 * 1024


class HashFormatError(ValueError):
    pass


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True)
class PasswordHash:
    n: int
    r: int
    p: int
    salt: bytes
    key: bytes

    @classmethod
    def parse(cls, text: str) -> PasswordHash:
        parts = text.strip().split(".")
        if len(parts) != 6 or parts[0] != SCHEME:
            raise HashFormatError(f"not a {SCHEME}.N.r.p.SALT.HASH string")
        try:
            n, r, p = (int(part) for part in parts[1:4])
            salt, key = _unb64(parts[4]), _unb64(parts[5])
        except ValueError:
            raise HashFormatError("unreadable parameters, salt or hash") from None
        if n < 2**10 or n & (n - 1) or not 1 <= r <= 64 or not 1 <= p <= 16:
            raise HashFormatError("scrypt parameters out of range")
        if len(salt) < 8 or len(key) < 16:
            raise HashFormatError("salt or hash too short")
        return cls(n, r, p, salt, key)

    def matches(self, password: str) -> bool:
        derived = hashlib.scrypt(
            password.encode("utf-8"),
            salt=self.salt,
            n=self.n,
            r=self.r,
            p=self.p,
            maxmem=_MAXMEM,
            dklen=len(self.key),
        )
        return hmac.compare_digest(derived, self.key)

    def __str__(self) -> str:
        return f"{SCHEME}.{self.n}.{self.r}.{self.p}.{_b64(self.salt)}.{_b64(self.key)}"


def hash_password(password: str) -> str:
    if not password:
        raise ValueError("an empty password")
    salt = secrets.token_bytes(SALT_BYTES)
    key = hashlib.scrypt(
        password.encode("utf-8"), salt=salt, n=N, r=R, p=P, maxmem=_MAXMEM, dklen=KEY_BYTES
    )
    return str(PasswordHash(N, R, P, salt, key))


# Checked when the name is unknown, so that a wrong name costs as long as a wrong password
# and the time of an answer does not tell which names exist.
_DECOY = PasswordHash(N, R, P, b"\0" * SALT_BYTES, b"\0" * KEY_BYTES)


def parse_users(entries: list[str]) -> dict[str, PasswordHash]:
    """``NAME:HASH`` entries (as ``Settings.dashboard_users`` holds them) by name; raises
    ``HashFormatError`` naming the user whose hash cannot be read (never the hash)."""
    users: dict[str, PasswordHash] = {}
    for entry in entries:
        name, _, hashed = entry.partition(":")
        try:
            users[name] = PasswordHash.parse(hashed)
        except HashFormatError as exc:
            raise HashFormatError(f"user {name!r}: {exc}") from None
    return users


def authenticate(users: Mapping[str, PasswordHash], name: str, password: str) -> bool:
    known = users.get(name)
    if known is None:
        _DECOY.matches(password)
        return False
    return known.matches(password)


def fingerprint(hashed: PasswordHash) -> str:
    """A short digest of a user's hash, kept in the session: a changed password (or a
    user taken out of the setting) ends the sessions signed in with the old one."""
    return hashlib.sha256(str(hashed).encode("ascii")).hexdigest()[:16]
