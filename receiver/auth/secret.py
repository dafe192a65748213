"""The shared secret header set when the webhook is registered with the provider."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

from starlette.requests import Request

from receiver.problems import Problem


def _digest(value: str) -> bytes:
    # Hashing first gives compare_digest equal lengths, so the comparison time does not
    # depend on how long each accepted secret is either.
    return hashlib.sha256(value.encode()).digest()


class SecretHeader:
    def __init__(self, header: str, secrets: Sequence[str], errors: list[str]) -> None:
        self.header = header
        if any(not secret.strip() for secret in secrets):
            errors.append("PIXRECON_WEBHOOK_SECRETS contains an empty secret")
        self._digests = tuple(_digest(secret) for secret in secrets)

    def check(self, request: Request) -> None:
        presented = request.headers.get(self.header)
        if presented is None:
            raise Problem(401, "unauthenticated", f"missing {self.header} header")
        if self._accepts(presented):
            return
        # A proxy that adds the header again sends two copies, the first not necessarily
        # the sender's: any copy that holds an accepted secret authenticates. Asked only
        # after the first failed, so a delivery with one copy pays nothing for it; every
        # copy compared (a list, not ``any`` cut short), so timing tells none apart.
        # A proxy may also join the copies into one line, comma-separated, as HTTP lets
        # it (RFC 9110 §5.3): no accepted secret holds a comma (the setting is a
        # comma-separated list), so each part is a copy of its own.
        copies = request.headers.getlist(self.header)
        parts = [part for copy in copies if "," in copy for part in copy.split(",")]
        if not any([self._accepts(copy) for copy in [*copies[1:], *parts]]):
            raise Problem(401, "unauthenticated", f"invalid {self.header} header")

    def _accepts(self, presented: str) -> bool:
        # Whitespace around a field value is not part of it (RFC 9110 §5.5); a sender that
        # pads the header must not be refused for it.
        candidate = _digest(presented.strip(" \t"))
        # Every accepted value is compared, always: timing must not tell which one (or
        # whether an old one) matched.
        matched = False
        for digest in self._digests:
            matched |= hmac.compare_digest(candidate, digest)
        return matched
