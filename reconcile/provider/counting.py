"""Every request to the provider counted the same way — the API calls and the token
fetches before them alike (a revoked secret or a provider that is down fails at the
token endpoint first, and its alerts read these series): by API family, endpoint as a
path template, and status (``error`` when no answer came)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from reconcile.metrics import PROVIDER_REQUESTS, PROVIDER_SECONDS

# A path segment that names a resource kind ("pix", "devolucao", "webhookrec") or an API
# version ("v1"); anything else (an endToEndId, a txid, a number) is an identifier, and
# one label value per identifier would make a series per Pix.
_LITERAL_SEGMENT = re.compile(r"[a-z][a-z_-]{0,23}|v[0-9]{1,2}")
_PLACEHOLDER = re.compile(r"\{[^}]*\}")


def endpoint_label(path: str) -> str:
    """The path as a template, guessed: ``/pix/E1234…/devolucao/D1`` →
    ``/pix/{id}/devolucao/{id}``. Callers that know their template pass it instead: an id
    of lower-case words (a payout's idempotency key, ``po-supplier``) reads as a word."""
    segments = path.split("?", 1)[0].split("/")
    return "/".join(s if not s or _LITERAL_SEGMENT.fullmatch(s) else "{id}" for s in segments)


def endpoint_template(template: str) -> str:
    """A path template as a label, its placeholders all ``{id}``."""
    return _PLACEHOLDER.sub("{id}", template)


@contextmanager
def counted(api: str, endpoint: str) -> Iterator[Callable[[int], None]]:
    """Counts the request made inside; the caller reports the status it got."""
    started = time.perf_counter()
    status = ["error"]

    def answered(code: int) -> None:
        status[0] = str(code)

    try:
        yield answered
    finally:
        PROVIDER_REQUESTS.labels(api, endpoint, status[0]).inc()
        PROVIDER_SECONDS.labels(api, endpoint).observe(time.perf_counter() - started)
