"""Authenticated JSON calls to a provider API with retries and typed errors.

Shared by every API family of the provider; each family's client (``QrCodeApi``, later the
accounts client) only builds paths and parameters.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection, Mapping
from typing import Any

import httpx

from reconcile.provider.counting import counted, endpoint_label, endpoint_template
from reconcile.provider.errors import ProviderError, ProviderUnavailable
from reconcile.provider.oauth import TokenCache
from reconcile.provider.responses import error_for, json_object, transport_error
from reconcile.provider.retry import RetryPolicy

log = logging.getLogger(__name__)

_IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
# Failures where the request certainly never reached the server: safe to retry any method.
_NOT_SENT_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)

QueryParams = Mapping[str, str | int]


def _capped(timeout: httpx.Timeout, left: float) -> httpx.Timeout:
    """``timeout`` with each of its limits (none is no limit) at most ``left`` seconds."""

    def cap(limit: float | None) -> float:
        return left if limit is None else min(limit, left)

    return httpx.Timeout(
        connect=cap(timeout.connect),
        read=cap(timeout.read),
        write=cap(timeout.write),
        pool=cap(timeout.pool),
    )


class ApiTransport:
    def __init__(
        self,
        base_url: str,
        tokens: TokenCache,
        http: httpx.Client,
        *,
        retry: RetryPolicy,
        headers: Mapping[str, str] | None = None,
        expired_token_types: Collection[str] = (),
        api: str = "provider",
    ) -> None:
        """``headers`` go on every call (e.g. ``x-account-id``). ``expired_token_types``
        are problem ``type`` codes meaning "token expired" (e.g. ``onz-0018``): they get
        the one token refresh a 401 gets, whatever status they come with. ``api`` names
        the API family in metrics."""
        self._base_url = base_url.rstrip("/")
        self._tokens = tokens
        self._http = http
        self._retry = retry
        self._headers = {"Accept": "application/json", **(headers or {})}
        self._expired_token_types = frozenset(expired_token_types)
        self._api = api

    def get_json(
        self, path: str, params: QueryParams | None = None, *, endpoint: str | None = None
    ) -> dict[str, Any]:
        return self.request_json("GET", path, params=params, endpoint=endpoint)

    def request_json(
        self,
        method: str,
        path: str,
        *,
        params: QueryParams | None = None,
        body: Any = None,
        idempotent: bool | None = None,
        endpoint: str | None = None,
    ) -> dict[str, Any]:
        """Send, retrying what is safe to retry, and return the JSON object answered.

        Non-idempotent requests are retried only when the server certainly did not act
        (connection never made, or 429). A 401 triggers one token refresh, not a retry.
        ``endpoint``: the path's template (``/cob/{txid}``), its metrics label; without it
        the label is guessed from the path. An error raised names this API family
        (``ProviderError.api``).
        """
        try:
            return self._request_json(method, path, params, body, idempotent, endpoint)
        except ProviderError as exc:
            if exc.api is None:
                exc.api = self._api
            raise

    def _request_json(
        self,
        method: str,
        path: str,
        params: QueryParams | None,
        body: Any,
        idempotent: bool | None,
        endpoint: str | None,
    ) -> dict[str, Any]:
        method = method.upper()
        safe = idempotent if idempotent is not None else method in _IDEMPOTENT_METHODS
        url = self._base_url + path
        content = None if body is None else json.dumps(body, default=str).encode("utf-8")
        headers = dict(self._headers)
        if content is not None:
            headers["Content-Type"] = "application/json"
        failures = 0
        started = self._retry.clock()
        # The first attempt has the client's own timeouts; a retry only what the budget
        # has left, so that it cannot end past it.
        timeout = self._http.timeout
        refreshed = False
        while True:
            token: str | None = None
            retryable = safe
            try:
                token = self._tokens.get(timeout=timeout)
                headers["Authorization"] = f"Bearer {token}"
                label = endpoint_template(endpoint) if endpoint else endpoint_label(path)
                response = self._send(method, url, label, params, content, headers, timeout)
            except ProviderUnavailable as exc:
                # The token endpoint failed; fetching a token changes nothing remotely.
                error: ProviderError = exc
                retryable = True
            except httpx.TransportError as exc:
                error = transport_error(exc, method, httpx.URL(url))
                error.__cause__ = exc
                retryable = safe or isinstance(exc, _NOT_SENT_ERRORS)
            else:
                if response.is_success:
                    return json_object(response) if response.content else {}
                error = error_for(response)
                if not refreshed and token is not None and self._token_rejected(error):
                    refreshed = True
                    self._tokens.invalidate(token)
                    continue
                retryable = safe or response.status_code == 429

            if not (retryable and isinstance(error, ProviderUnavailable)):
                raise error
            failures += 1
            elapsed = self._retry.clock() - started
            delay = self._retry.delay(failures, error.retry_after, elapsed)
            if delay is None:
                raise error.gave_up(failures, elapsed)
            # Once per failure is too loud under minutes of throttling: the first, then
            # every tenth.
            if failures == 1 or failures % 10 == 0:
                log.warning(
                    "provider call failed (%d so far, %.0fs since the first try), retrying "
                    "in %.2fs: %s",
                    failures,
                    elapsed,
                    delay,
                    error,
                )
            self._retry.sleep(delay)
            left = self._retry.left(self._retry.clock() - started)
            if left is not None:
                if left <= 0:  # the sleep overran
                    raise error.gave_up(failures, self._retry.clock() - started)
                timeout = _capped(self._http.timeout, left)

    def _send(
        self,
        method: str,
        url: str,
        endpoint: str,
        params: QueryParams | None,
        content: bytes | None,
        headers: dict[str, str],
        timeout: httpx.Timeout,
    ) -> httpx.Response:
        with counted(self._api, endpoint) as answered:
            response = self._http.request(
                method, url, params=params, content=content, headers=headers, timeout=timeout
            )
            answered(response.status_code)
            return response

    def _token_rejected(self, error: ProviderError) -> bool:
        if error.status == 401:
            return True
        # A type may be a bare code or a URL ending in one.
        code = (error.type or "").rstrip("/").rsplit("/", 1)[-1]
        return code in self._expired_token_types
