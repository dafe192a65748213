"""OAuth clients of the accounts API: tokens bound to accounts, expiry, and a rate limit.

Unlike the QR side's ``TokenStore`` this one remembers expired tokens for a while, because
the provider answers an expired token with its own code (``onz-0018``) and clients are
expected to refresh on exactly that.
"""

from __future__ import annotations

import secrets
import threading
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum

from sandbox.clock import Clock
from sandbox.credentials import verified

# How long an expired token is still recognised as "expired" rather than "unknown".
_EXPIRED_MEMORY = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class AccountsClient:
    client_id: str
    secret: str
    account_ids: frozenset[str]


@dataclass(frozen=True, slots=True)
class AccountsToken:
    value: str
    client_id: str
    account_ids: frozenset[str]
    expires_at: datetime


class TokenState(Enum):
    VALID = "valid"
    EXPIRED = "expired"
    UNKNOWN = "unknown"


class TokenRateLimited(Exception):
    def __init__(self, retry_after: float) -> None:
        super().__init__(f"token rate limit reached; retry after {retry_after:.1f}s")
        self.retry_after = retry_after


class AccountsTokens:
    """Thread-safe: the token endpoint and API routes run on uvicorn's event loop while
    tests drive the same object from their own thread."""

    def __init__(
        self, *, lifetime_seconds: float, rate_limit: int, rate_window_seconds: float, clock: Clock
    ) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self.lifetime_seconds = lifetime_seconds
        self.rate_limit = rate_limit
        self.rate_window_seconds = rate_window_seconds
        self._clients: dict[str, AccountsClient] = {}
        self._tokens: dict[str, AccountsToken] = {}
        self._recent: dict[str, deque[datetime]] = {}
        self._issued = 0

    @property
    def issued_count(self) -> int:
        with self._lock:
            return self._issued

    def register_client(
        self, client_id: str, secret: str, account_ids: frozenset[str]
    ) -> AccountsClient:
        client = AccountsClient(client_id, secret, frozenset(account_ids))
        with self._lock:
            self._clients[client_id] = client
        return client

    def authenticate(self, client_id: str, secret: str) -> AccountsClient | None:
        with self._lock:
            client = self._clients.get(client_id)
        return verified(client, secret)

    def issue(self, client: AccountsClient) -> AccountsToken:
        """A new token, or ``TokenRateLimited`` once the client used up its window."""
        now = self._clock()
        window = timedelta(seconds=self.rate_window_seconds)
        with self._lock:
            recent = self._recent.setdefault(client.client_id, deque())
            while recent and recent[0] <= now - window:
                recent.popleft()
            if len(recent) >= self.rate_limit:
                raise TokenRateLimited((recent[0] + window - now).total_seconds())
            recent.append(now)
            token = AccountsToken(
                value=secrets.token_urlsafe(32),
                client_id=client.client_id,
                account_ids=client.account_ids,
                expires_at=now + timedelta(seconds=self.lifetime_seconds),
            )
            # Pruning here keeps a long benchmark run from growing the table forever.
            forgotten = now - _EXPIRED_MEMORY
            for value in [v for v, t in self._tokens.items() if t.expires_at <= forgotten]:
                del self._tokens[value]
            self._tokens[token.value] = token
            self._issued += 1
        return token

    def lookup(self, value: str) -> tuple[TokenState, AccountsToken | None]:
        with self._lock:
            token = self._tokens.get(value)
        if token is None:
            return TokenState.UNKNOWN, None
        if token.expires_at <= self._clock():
            return TokenState.EXPIRED, token
        return TokenState.VALID, token

    def expire_all(self) -> None:
        """Make every live token expired now: the next call with one gets ``onz-0018``."""
        now = self._clock()
        with self._lock:
            for value, token in list(self._tokens.items()):
                if token.expires_at > now:
                    self._tokens[value] = AccountsToken(
                        token.value, token.client_id, token.account_ids, now
                    )
