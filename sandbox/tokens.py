"""OAuth2 clients and the bearer tokens issued to them."""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta

from sandbox.clock import Clock
from sandbox.credentials import verified


@dataclass(frozen=True, slots=True)
class OAuthClient:
    client_id: str
    secret: str
    scopes: frozenset[str]


@dataclass(frozen=True, slots=True)
class IssuedToken:
    value: str
    client_id: str
    scopes: frozenset[str]
    expires_at: datetime


class TokenStore:
    """Registered clients and live tokens; safe to share between threads."""

    def __init__(self, *, lifetime_seconds: float, clock: Clock) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._lifetime = lifetime_seconds
        self._clients: dict[str, OAuthClient] = {}
        self._tokens: dict[str, IssuedToken] = {}
        self._issued = 0

    @property
    def lifetime_seconds(self) -> float:
        return self._lifetime

    @lifetime_seconds.setter
    def lifetime_seconds(self, value: float) -> None:
        if value <= 0:
            raise ValueError("token lifetime must be positive")
        self._lifetime = value

    @property
    def issued_count(self) -> int:
        """How many tokens were ever issued: lets tests prove a client caches its token."""
        with self._lock:
            return self._issued

    def register_client(self, client_id: str, secret: str, scopes: frozenset[str]) -> OAuthClient:
        client = OAuthClient(client_id, secret, frozenset(scopes))
        with self._lock:
            self._clients[client_id] = client
        return client

    def authenticate(self, client_id: str, secret: str) -> OAuthClient | None:
        with self._lock:
            client = self._clients.get(client_id)
        return verified(client, secret)

    def issue(self, client: OAuthClient, scopes: frozenset[str]) -> IssuedToken:
        now = self._clock()
        token = IssuedToken(
            value=secrets.token_urlsafe(32),
            client_id=client.client_id,
            scopes=scopes,
            expires_at=now + timedelta(seconds=self._lifetime),
        )
        with self._lock:
            # Pruning here keeps a long benchmark run from growing the table forever.
            for value in [v for v, t in self._tokens.items() if t.expires_at <= now]:
                del self._tokens[value]
            self._tokens[token.value] = token
            self._issued += 1
        return token

    def lookup(self, value: str) -> IssuedToken | None:
        """The live token with this value; ``None`` when unknown or expired."""
        with self._lock:
            token = self._tokens.get(value)
        if token is None or token.expires_at <= self._clock():
            return None
        return token

    def expire_all(self) -> None:
        """Invalidate every issued token, as a provider does after a key rotation."""
        with self._lock:
            self._tokens.clear()
