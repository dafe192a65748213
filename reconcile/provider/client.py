"""What every API family's client shares: its HTTP client, token cache and transport."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from types import TracebackType
from typing import ClassVar, Self

import httpx

from reconcile.provider.oauth import TokenCache
from reconcile.provider.retry import RetryPolicy
from reconcile.provider.transport import ApiTransport


class ProviderClient:
    """An HTTP client (created here unless ``http_client`` is given; only one created
    here is closed by ``close()``), the OAuth2 ``tokens`` and the retrying ``_api``.

    The token endpoint is ``token_url``, else ``oauth_path`` under ``base_url``.
    """

    # The API family, as metrics name it (pixrecon_provider_requests_total{api}).
    API: ClassVar[str] = "provider"

    def __init__(
        self,
        base_url: str,
        client_id: str,
        client_secret: str,
        *,
        oauth_path: str,
        http_client: httpx.Client | None,
        timeout: float,
        token_url: str | None,
        retry: RetryPolicy | None,
        token_refresh_margin: float,
        scopes: Sequence[str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        headers: Mapping[str, str] | None = None,
        expired_token_types: Collection[str] = (),
    ) -> None:
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else httpx.Client(timeout=timeout)
        base = base_url.rstrip("/")
        self.tokens = TokenCache(
            self._http,
            token_url if token_url is not None else base + oauth_path,
            client_id,
            client_secret,
            scopes=scopes,
            refresh_margin=token_refresh_margin,
            clock=clock,
            wall_clock=wall_clock,
            api=self.API,
        )
        self._api = ApiTransport(
            base,
            self.tokens,
            self._http,
            retry=retry if retry is not None else RetryPolicy(),
            headers=headers,
            expired_token_types=expired_token_types,
            api=self.API,
        )

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
