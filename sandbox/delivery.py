"""What every sandbox notification deliverer shares: POSTs with bounded retries, and
sending planned copies in rounds.

The deliverers (``sandbox.webhooks``, ``sandbox.automatico_webhooks``,
``sandbox.accounts.delivery``) differ in paths, bodies and reports; the sender only
counts, on whichever report it is given, what happened to each request.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from types import TracebackType
from typing import Any, Protocol, Self, TypeVar

import httpx

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


class SendCounts(Protocol):
    """The request counters of a delivery report."""

    requests_sent: int  # HTTP POSTs, retries included
    non_2xx_responses: int
    connection_errors: int
    statuses: list[int]


class RetryingSender:
    """POSTs JSON bodies, each up to ``max_attempts`` times with a doubling back-off.

    Every request carries ``Content-Type``, ``User-Agent``, ``extra_headers`` and the
    secret header; ``client`` (if given) is borrowed, not closed by ``close()``.
    """

    def __init__(
        self,
        *,
        max_attempts: int = 3,
        retry_delay: float = 0.5,
        client: httpx.Client | None = None,
        timeout: float = 5.0,
        sleep: Callable[[float], None] = time.sleep,
        secret_header: str | None = None,
        secret: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if (secret_header is None) != (secret is None):
            raise ValueError("secret_header and secret go together")
        self._headers = {"Content-Type": "application/json", "User-Agent": "pixrecon-sandbox"}
        if extra_headers:
            self._headers.update(extra_headers)
        if secret_header is not None and secret is not None:
            self._headers[secret_header] = secret
        self._max_attempts = max_attempts
        self._retry_delay = retry_delay
        self._owns_client = client is None
        self._client = client if client is not None else httpx.Client(timeout=timeout)
        self._sleep = sleep

    def post(
        self,
        url: str,
        content: bytes,
        counts: SendCounts,
        headers: Mapping[str, str] | None = None,
    ) -> bool:
        """Whether some attempt was acknowledged (2xx); ``headers`` add to the usual ones."""
        sent = {**self._headers, **headers} if headers else self._headers
        for attempt in range(self._max_attempts):
            if attempt:
                self._sleep(self._retry_delay * 2 ** (attempt - 1))
            counts.requests_sent += 1
            try:
                response = self._client.post(url, content=content, headers=sent)
            except httpx.TransportError:
                counts.connection_errors += 1
                continue
            counts.statuses.append(response.status_code)
            if response.is_success:
                return True
            counts.non_2xx_responses += 1
        return False

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def send_in_rounds(
    copies: Sequence[tuple[K, T, int]],
    post: Callable[[list[T]], bool],
    *,
    batch_size: int = 1,
    shuffle: Callable[[list[Any]], None] | None = None,
) -> dict[K, int]:
    """Send each ``(key, item, times)`` ``times`` times; acknowledged copies by key.

    Round ``n`` sends the ``n``-th copy of every item still due, in batches of
    ``batch_size`` (after ``shuffle``, if given), so all first copies go out before any
    repeat and a repeat always reaches the receiver as a later, separate request.
    """
    acknowledged: dict[K, int] = {}
    for round_number in range(max((times for _, _, times in copies), default=0)):
        due = [(key, item) for key, item, times in copies if times > round_number]
        if shuffle is not None:
            shuffle(due)
        for start in range(0, len(due), batch_size):
            batch = due[start : start + batch_size]
            if post([item for _, item in batch]):
                for key, _ in batch:
                    acknowledged[key] = acknowledged.get(key, 0) + 1
    return acknowledged
