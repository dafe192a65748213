"""The IP allow-list: only known provider addresses may deliver (403 otherwise)."""

from __future__ import annotations

from collections.abc import Sequence

from starlette.requests import Request

from receiver.auth.client import ClientResolver, Network, in_networks
from receiver.problems import Problem


class IpAllowList:
    def __init__(self, allowed: Sequence[Network], resolver: ClientResolver) -> None:
        self.allowed = tuple(allowed)
        self._resolver = resolver

    def check(self, request: Request) -> None:
        client = self._resolver.client_address(request)
        if client is None:
            raise Problem(403, "ip-not-allowed", "the client address could not be determined")
        if not in_networks(client, self.allowed):
            # The caller's own address is no secret to the caller, and names the entry an
            # operator would have to add.
            raise Problem(403, "ip-not-allowed", f"client address {client} is not allowed")
