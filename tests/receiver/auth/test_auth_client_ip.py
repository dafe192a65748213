"""Client address resolution through trusted proxies, and the IP allow-list."""

from __future__ import annotations

import pytest

from receiver.auth import WebhookAuth
from receiver.problems import Problem
from tests.receiver.auth.auth_support import make_request, settings_for

PROXIES = ["10.0.0.0/8", "2001:db8:ffff::/48"]


def resolve(peer: str | None, *forwarded: str, proxies: list[str] = PROXIES) -> str | None:
    auth = WebhookAuth(settings_for(trusted_proxies=proxies, webhook_secrets=["s"]), "qrcode")
    headers = [("X-Forwarded-For", value) for value in forwarded]
    return auth.client_ip(make_request(peer, headers))


def test_untrusted_peer_is_the_client_and_its_forwarded_for_is_ignored() -> None:
    assert resolve("203.0.113.9", "198.51.100.1") == "203.0.113.9"


def test_trusted_proxy_forwards_the_client() -> None:
    assert resolve("10.1.2.3", "198.51.100.1") == "198.51.100.1"


def test_chain_of_trusted_proxies_is_walked_from_the_right() -> None:
    assert resolve("10.0.0.1", "198.51.100.1, 10.9.9.9, 10.8.8.8") == "198.51.100.1"


def test_spoofed_left_entries_are_ignored_right_most_untrusted_wins() -> None:
    # The client wrote "1.1.1.1" itself; our proxy appended the address it really saw.
    assert resolve("10.0.0.1", "1.1.1.1, 198.51.100.7") == "198.51.100.7"


def test_several_forwarded_for_headers_form_one_list() -> None:
    assert resolve("10.0.0.1", "1.1.1.1", "198.51.100.7, 10.0.0.2") == "198.51.100.7"


def test_trusted_peer_without_forwarded_for_is_itself_the_client() -> None:
    assert resolve("10.0.0.1") == "10.0.0.1"


def test_all_hops_trusted_yields_the_left_most() -> None:
    assert resolve("10.0.0.1", "10.0.0.3, 10.0.0.2") == "10.0.0.3"


def test_garbage_after_the_trusted_hops_makes_the_client_unknown() -> None:
    assert resolve("10.0.0.1", "198.51.100.1, unknown") is None


def test_ports_and_brackets_written_by_proxies_are_understood() -> None:
    assert resolve("10.0.0.1", "198.51.100.1:4711") == "198.51.100.1"
    assert resolve("10.0.0.1", "[2001:db8::7]:443") == "2001:db8::7"


def test_ipv6_proxy_and_client() -> None:
    assert resolve("2001:db8:ffff::1", "2001:db8:1::5") == "2001:db8:1::5"
    assert resolve("2001:db8:1::5", "198.51.100.1") == "2001:db8:1::5"


def test_ipv4_mapped_peer_is_compared_as_ipv4() -> None:
    assert resolve("::ffff:10.0.0.1", "198.51.100.1") == "198.51.100.1"


def test_no_peer_means_no_client() -> None:
    assert resolve(None, "198.51.100.1") is None


def test_no_trusted_proxies_trusts_no_header() -> None:
    assert resolve("10.0.0.1", "198.51.100.1", proxies=[]) == "10.0.0.1"


def allow_list(**overrides: object) -> WebhookAuth:
    values: dict[str, object] = {
        "allow_ips": ["198.51.100.0/24", "203.0.113.5", "2001:db8:1::/64"],
        "trusted_proxies": ["10.0.0.1"],
    }
    values.update(overrides)
    return WebhookAuth(settings_for(**values), "qrcode")


@pytest.mark.parametrize(
    ("peer", "forwarded"),
    [
        ("198.51.100.77", None),  # inside the CIDR
        ("203.0.113.5", None),  # a single address
        ("2001:db8:1::abcd", None),  # IPv6 CIDR
        ("10.0.0.1", "198.51.100.77"),  # through the trusted proxy
    ],
)
def test_allowed_addresses_pass(peer: str, forwarded: str | None) -> None:
    headers = [("X-Forwarded-For", forwarded)] if forwarded else []
    allow_list().check_request(make_request(peer, headers))


@pytest.mark.parametrize(
    ("peer", "forwarded"),
    [
        ("203.0.113.6", None),
        ("2001:db8:2::1", None),
        # The allowed address in a header from an untrusted peer is a forgery.
        ("203.0.113.6", "198.51.100.77"),
        # The trusted proxy itself is not an allowed client.
        ("10.0.0.1", None),
        ("10.0.0.1", "garbage"),
    ],
)
def test_other_addresses_get_403(peer: str, forwarded: str | None) -> None:
    headers = [("X-Forwarded-For", forwarded)] if forwarded else []
    with pytest.raises(Problem) as refused:
        allow_list().check_request(make_request(peer, headers))
    assert refused.value.status == 403
    assert refused.value.slug == "ip-not-allowed"
