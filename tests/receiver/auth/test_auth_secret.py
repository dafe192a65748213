"""The shared secret header: rotation, refusal, and what is never stored."""

from __future__ import annotations

import pytest

from receiver.auth import WebhookAuth
from receiver.problems import Problem
from reconcile.settings import Settings
from tests.receiver.auth.auth_support import make_request, settings_for

OLD, NEW = "old-secret-2025", "new-secret-2026"


def auth(**overrides: object) -> WebhookAuth:
    values: dict[str, object] = {"webhook_secrets": [OLD, NEW]}
    values.update(overrides)
    return WebhookAuth(settings_for(**values), "qrcode")


# Whitespace around a header's value is not part of it (RFC 9110 §5.5).
@pytest.mark.parametrize("secret", [OLD, NEW, f" {NEW} ", f"\t{OLD}"])
def test_every_accepted_value_passes_during_rotation(secret: str) -> None:
    auth().check_request(make_request(headers=[("X-Webhook-Secret", secret)]))


@pytest.mark.parametrize(
    "copies",
    [["wrong", NEW], [OLD, "wrong"], ["", f" {OLD} ", "wrong"]],
    ids=["second", "first", "among-three"],
)
def test_a_header_sent_twice_passes_when_any_copy_holds_an_accepted_value(
    copies: list[str],
) -> None:
    """A proxy that adds its own copy of the header (configured with another value, or
    none) puts it before or after the sender's."""
    auth().check_request(make_request(headers=[("X-Webhook-Secret", c) for c in copies]))


@pytest.mark.parametrize(
    "joined",
    [f"wrong, {NEW}", f"{OLD},wrong", f"wrong , {OLD} , other", f"{NEW}, {NEW}"],
    ids=["second", "first", "among-three", "twice"],
)
def test_copies_a_proxy_joined_into_one_line_pass_when_any_holds_an_accepted_value(
    joined: str,
) -> None:
    """HTTP lets a proxy join the copies of a header into one line, comma-separated (Node's
    own server does, for a header it does not know): the sender's copy is still there, and
    no accepted secret holds a comma."""
    auth().check_request(make_request(headers=[("X-Webhook-Secret", joined)]))


@pytest.mark.parametrize(
    ("headers", "detail"),
    [
        ([], "missing X-Webhook-Secret header"),
        (
            [("X-Webhook-Secret", "wrong"), ("X-Webhook-Secret", NEW + "x")],
            "invalid X-Webhook-Secret header",
        ),
        ([("X-Webhook-Secret", "wrong")], "invalid X-Webhook-Secret header"),
        ([("X-Webhook-Secret", "")], "invalid X-Webhook-Secret header"),
        ([("X-Webhook-Secret", NEW[:3] + " " + NEW[3:])], "invalid X-Webhook-Secret header"),
        ([("X-Webhook-Secret", NEW + "x ")], "invalid X-Webhook-Secret header"),
        ([("X-Webhook-Secret", f"wrong, {NEW}x,")], "invalid X-Webhook-Secret header"),
        ([("X-Webhook-Secret", ",")], "invalid X-Webhook-Secret header"),
        ([("X-Other-Header", NEW)], "missing X-Webhook-Secret header"),
    ],
)
def test_wrong_or_missing_secret_is_401(headers: list[tuple[str, str]], detail: str) -> None:
    with pytest.raises(Problem) as refused:
        auth().check_request(make_request(headers=headers))
    assert (refused.value.status, refused.value.slug) == (401, "unauthenticated")
    assert refused.value.detail == detail
    assert OLD not in refused.value.detail
    assert NEW not in refused.value.detail


def test_the_header_name_is_configurable_and_case_insensitive() -> None:
    custom = auth(webhook_secret_header="X-Provider-Token")
    custom.check_request(make_request(headers=[("x-provider-token", NEW)]))
    with pytest.raises(Problem):
        custom.check_request(make_request(headers=[("X-Webhook-Secret", NEW)]))


def test_credentials_are_redacted_from_stored_headers() -> None:
    redacted = auth(webhook_secret_header="X-Provider-Token").redacted_headers()
    assert {"authorization", "cookie", "proxy-authorization", "x-provider-token"} <= redacted
    assert "webhook-signature" not in redacted
    assert all(name == name.lower() for name in redacted)


@pytest.mark.parametrize("name", ["bad header:", "X-Webhook Secret", "", "X-Secret:"])
def test_a_header_name_no_client_can_send_is_a_setting_error(name: str) -> None:
    """Every delivery would be refused 401, and the provider disables a failing webhook:
    better said when the receiver starts."""
    with pytest.raises(ValueError, match="an HTTP header name"):
        Settings(_env_file=None, webhook_secret_header=name)
    assert Settings(_env_file=None, webhook_secret_header="X-Hook_Key.1").webhook_secret_header
