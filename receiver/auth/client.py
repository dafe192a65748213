"""Who is the client? The TCP peer, unless the peer is a trusted proxy.

``X-Forwarded-For`` is a list anyone can write to; only the entries appended by proxies
we trust are believed. Walking from the right and stopping at the first address that is
not a trusted proxy yields the last hop no attacker could have forged.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable, Sequence

from starlette.requests import Request

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(entries: Iterable[str], variable: str, errors: list[str]) -> tuple[Network, ...]:
    """Addresses or CIDRs; a bad entry is reported, never silently dropped or widened."""
    networks: list[Network] = []
    for entry in entries:
        text = entry.strip()
        try:
            networks.append(ipaddress.ip_network(text, strict=True))
        except ValueError as exc:
            errors.append(f"{variable}: {text!r} is not an IP address or CIDR ({exc})")
    return tuple(networks)


# Every delivery asks for its peer's address, and the peers are few (the provider's
# senders, a load balancer): parsing one took about 2 µs of the event loop each time.
@functools.lru_cache(maxsize=4096)
def parse_address(text: str) -> Address | None:
    """An address as proxies write it: bare, ``a.b.c.d:port`` or ``[v6]:port``."""
    value = text.strip()
    if value.startswith("["):
        end = value.find("]")
        if end == -1:
            return None
        value = value[1:end]
    elif value.count(":") == 1:
        value = value.split(":", 1)[0]
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return None
    # A dual-stack socket reports IPv4 peers as ::ffff:a.b.c.d; allow-lists are written
    # in IPv4, so compare in IPv4.
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def in_networks(address: Address | None, networks: Sequence[Network]) -> bool:
    return address is not None and any(address in network for network in networks)


class ClientResolver:
    def __init__(self, trusted_proxies: Sequence[Network]) -> None:
        self.trusted_proxies = tuple(trusted_proxies)

    def peer(self, request: Request) -> Address | None:
        return parse_address(request.client.host) if request.client else None

    def peer_is_trusted(self, request: Request) -> bool:
        return in_networks(self.peer(request), self.trusted_proxies)

    def resolve(self, peer: Address | None, forwarded_for: Sequence[str]) -> Address | None:
        if not in_networks(peer, self.trusted_proxies):
            return peer
        hops = [hop for header in forwarded_for for hop in header.split(",") if hop.strip()]
        client = peer
        for hop in reversed(hops):
            address = parse_address(hop)
            if address is None:
                # Garbage to the right of any trustworthy hop: the client is unknown, and
                # unknown fails every allow-list.
                return None
            client = address
            if not in_networks(address, self.trusted_proxies):
                return address
        # Every hop is a trusted proxy: the left-most one is as far as we can see.
        return client

    def client_address(self, request: Request) -> Address | None:
        return self.resolve(self.peer(request), request.headers.getlist("x-forwarded-for"))

    def client_ip(self, request: Request) -> str | None:
        address = self.client_address(request)
        return str(address) if address is not None else None
