"""OAuth2 client-credentials tokens: fetched once, shared, refreshed before they expire."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

import httpx

from reconcile.provider.counting import counted, endpoint_label
from reconcile.provider.errors import InvalidResponse, ProviderUnavailable
from reconcile.provider.responses import error_for, json_object, transport_error

log = logging.getLogger(__name__)

# Epoch values above this are milliseconds: in seconds it would be the year 5138.
_EPOCH_MILLIS_THRESHOLD = 100_000_000_000


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float | Decimal):
        return float(value)
    if isinstance(value, str):
        try:
            return float(Decimal(value.strip()))
        except InvalidOperation:
            return None
    return None


def _expires_at_epoch(value: Any) -> float | None:
    number = _number(value)
    if number is not None:
        return number / 1000 if number > _EPOCH_MILLIS_THRESHOLD else number
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed.timestamp() if parsed.tzinfo is not None else None
    return None


class TokenCache:
    """One bearer token per set of credentials, safe to share between worker threads.

    The lock is held while fetching, so concurrent callers wait for one token instead of
    stampeding a rate-limited token endpoint. After the endpoint answers 429 with
    ``Retry-After`` nobody asks it again before then: a still-valid token keeps being
    used, otherwise ``ProviderUnavailable`` carries the remaining wait.
    """

    def __init__(
        self,
        http: httpx.Client,
        token_url: str,
        client_id: str,
        client_secret: str,
        *,
        scopes: Sequence[str] | None = None,
        refresh_margin: float = 30.0,
        default_lifetime: float = 300.0,
        auth_style: Literal["basic", "body"] = "basic",
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        api: str = "provider",
    ) -> None:
        self._http = http
        self._api = api
        self._token_url = token_url
        self._client_id = client_id
        self._client_secret = client_secret
        self._scopes = list(scopes) if scopes else []
        self._refresh_margin = refresh_margin
        self._default_lifetime = default_lifetime
        self._auth_style = auth_style
        self._clock = clock
        self._wall_clock = wall_clock
        self._lock = threading.Lock()
        self._token: str | None = None
        self._refresh_at = 0.0
        self._expires_at = 0.0
        self._blocked_until = 0.0
        self._fetches = 0

    @property
    def fetch_count(self) -> int:
        return self._fetches

    def get(self, *, timeout: httpx.Timeout | None = None) -> str:
        """A token that is not about to expire, fetching one if needed; ``timeout``
        bounds that fetch (the client's own timeouts without it)."""
        with self._lock:
            now = self._clock()
            if self._token is not None and now < self._refresh_at:
                return self._token
            # A proactive refresh that cannot happen yet must not fail a call the current
            # token can still serve.
            usable = self._token if self._token is not None and now < self._expires_at else None
            if now < self._blocked_until:
                if usable is not None:
                    return usable
                wait = self._blocked_until - now
                message = f"token endpoint rate limited for {wait:.1f}s more"
                raise ProviderUnavailable(message, status=429, retry_after=wait)
            try:
                self._token, self._refresh_at, self._expires_at = self._fetch(timeout)
            except ProviderUnavailable as exc:
                if exc.status == 429 and exc.retry_after:
                    self._blocked_until = self._clock() + exc.retry_after
                if usable is None:
                    raise
                log.warning("token refresh failed, using the current token: %s", exc)
                return usable
            return self._token

    def invalidate(self, token: str) -> None:
        """Forget ``token`` after the API refused it; a newer token is kept."""
        with self._lock:
            if self._token == token:
                self._token = None

    def _fetch(self, timeout: httpx.Timeout | None = None) -> tuple[str, float, float]:
        """A new token, when to refresh it and when it expires (on ``clock``)."""
        form = {"grant_type": "client_credentials"}
        if self._scopes:
            form["scope"] = " ".join(self._scopes)
        auth: httpx.BasicAuth | None = None
        if self._auth_style == "basic":
            auth = httpx.BasicAuth(self._client_id, self._client_secret)
        else:
            form["client_id"] = self._client_id
            form["client_secret"] = self._client_secret
        try:
            with counted(self._api, endpoint_label(httpx.URL(self._token_url).path)) as answered:
                response = self._http.post(
                    self._token_url,
                    data=form,
                    auth=auth if auth is not None else httpx.USE_CLIENT_DEFAULT,
                    headers={"Accept": "application/json"},
                    timeout=timeout if timeout is not None else httpx.USE_CLIENT_DEFAULT,
                )
                answered(response.status_code)
        except httpx.TransportError as exc:
            raise transport_error(exc, "POST", httpx.URL(self._token_url)) from exc
        if not response.is_success:
            raise error_for(response)
        body = json_object(response)
        self._fetches += 1

        token = body.get("access_token", body.get("accessToken"))
        if not isinstance(token, str) or not token:
            raise InvalidResponse("token response has no access_token", status=200)
        now = self._clock()
        lifetime = self._lifetime(body)
        margin = min(self._refresh_margin, lifetime / 2)
        log.debug("fetched provider token, lifetime %.0fs", lifetime)
        return token, now + lifetime - margin, now + lifetime

    def _lifetime(self, body: dict[str, Any]) -> float:
        expires_in = _number(body.get("expires_in", body.get("expiresIn")))
        if expires_in is not None:
            return max(0.0, expires_in)
        expires_at = _expires_at_epoch(body.get("expiresAt", body.get("expires_at")))
        if expires_at is not None:
            return max(0.0, expires_at - self._wall_clock())
        # Unknown lifetime: guess; a 401 still makes the transport fetch a new token.
        return self._default_lifetime
