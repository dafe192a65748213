"""Which defences guard which family, and configurations that must be refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from receiver.auth import (
    AuthConfigError,
    WebhookAuth,
    auth_is_configured,
    configuration_errors,
)
from receiver.problems import Problem
from tests.receiver.auth.auth_support import make_request, settings_for

PROXY = "10.0.0.1"
VERIFIED = [("X-SSL-Client-Verify", "SUCCESS")]
MTLS_VIA_PROXY: dict[str, object] = {
    "trusted_proxies": [PROXY],
    "mtls_verified_header": "X-SSL-Client-Verify",
}


def test_empty_family_lists_mean_every_configured_defence() -> None:
    settings = settings_for(webhook_secrets=["s"], allow_ips=["198.51.100.0/24"])
    for family in ("qrcode", "accounts"):
        assert WebhookAuth(settings, family).defences == {"secret", "ip"}
    assert auth_is_configured(settings)


def test_each_family_requires_only_what_it_lists() -> None:
    settings = settings_for(
        webhook_secrets=["s"], hmac_secrets=["h"], qrcode_auth=["secret"], accounts_auth=["hmac"]
    )
    qrcode, accounts = WebhookAuth(settings, "qrcode"), WebhookAuth(settings, "accounts")
    assert (sorted(qrcode.defences), sorted(accounts.defences)) == (["secret"], ["hmac"])
    # The accounts routes do not ask for the secret header, the QR code routes do.
    accounts.check_request(make_request())
    with pytest.raises(Problem):
        qrcode.check_request(make_request())
    qrcode.check_body(make_request(headers=[("X-Webhook-Secret", "s")]), b"{}")


def test_listed_defences_must_all_pass() -> None:
    settings = settings_for(
        webhook_secrets=["s"], allow_ips=["198.51.100.1"], qrcode_auth=["ip", "Secret "]
    )
    auth = WebhookAuth(settings, "qrcode")
    auth.check_request(make_request("198.51.100.1", [("X-Webhook-Secret", "s")]))
    with pytest.raises(Problem) as wrong_ip:
        auth.check_request(make_request("198.51.100.2", [("X-Webhook-Secret", "s")]))
    assert wrong_ip.value.status == 403
    with pytest.raises(Problem) as no_secret:
        auth.check_request(make_request("198.51.100.1"))
    assert no_secret.value.status == 401


def test_the_ip_check_comes_first() -> None:
    auth = WebhookAuth(settings_for(webhook_secrets=["s"], allow_ips=["198.51.100.1"]), "qrcode")
    with pytest.raises(Problem) as refused:
        auth.check_request(make_request("203.0.113.1"))
    assert refused.value.status == 403


def test_nothing_configured_is_reported_not_configured() -> None:
    settings = settings_for()
    assert not WebhookAuth(settings, "qrcode").configured
    assert not auth_is_configured(settings)
    assert configuration_errors(settings) == []


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"accounts_auth": ["hmac"]}, "PIXRECON_ACCOUNTS_AUTH requires 'hmac'"),
        ({"qrcode_auth": ["mtls"]}, "PIXRECON_QRCODE_AUTH requires 'mtls' but neither"),
        ({"qrcode_auth": ["ip"]}, "PIXRECON_ALLOW_IPS is empty"),
        ({"qrcode_auth": ["hamc"]}, "unknown defence 'hamc'"),
        ({"allow_ips": ["10.0.0.300"]}, "PIXRECON_ALLOW_IPS: '10.0.0.300'"),
        ({"trusted_proxies": ["10.0.0.1/8"]}, "PIXRECON_TRUSTED_PROXIES: '10.0.0.1/8'"),
        ({"mtls_verified_header": "X-SSL-Client-Verify"}, "PIXRECON_TRUSTED_PROXIES is empty"),
        (
            {**MTLS_VIA_PROXY, "mtls_subject_header": "X-SSL-Client-Subject"},
            "PIXRECON_MTLS_ALLOWED_SUBJECTS is empty",
        ),
        ({**MTLS_VIA_PROXY, "mtls_allowed_subjects": ["/CN=x"]}, "SUBJECT_HEADER is not"),
        ({"tls_client_ca": "/etc/ca.pem"}, "PIXRECON_TLS_CLIENT_CA is set but TLS"),
        ({"tls_certfile": "/etc/cert.pem"}, "must be set together"),
        ({"hmac_secrets": ["whsec_%%%"]}, "secret #1 is not valid base64"),
        (
            {
                **MTLS_VIA_PROXY,
                "mtls_subject_header": "X-SSL-Client-Subject",
                "mtls_allowed_subjects": ["/CN=x"],
                "tls_certfile": "cert.pem",
                "tls_keyfile": "key.pem",
                "tls_client_ca": "ca.pem",
            },
            "PIXRECON_MTLS_ALLOWED_SUBJECTS cannot be enforced",
        ),
    ],
)
def test_misconfigurations_are_refused(overrides: dict[str, object], message: str) -> None:
    settings = settings_for(webhook_secrets=["s"], **overrides)
    errors = configuration_errors(settings)
    assert any(message in error for error in errors), errors
    assert not auth_is_configured(settings)


def test_construction_raises_with_every_problem_at_once() -> None:
    settings = settings_for(allow_ips=["nope"], accounts_auth=["hmac"])
    with pytest.raises(AuthConfigError) as raised:
        WebhookAuth(settings, "accounts")
    assert len(raised.value.errors) == 2
    # The same mistake seen by both families is reported once.
    assert len(configuration_errors(settings)) == 2


def test_unreadable_tls_files_are_reported(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.pem")
    settings = settings_for(webhook_secrets=["s"], tls_certfile=missing, tls_keyfile=missing)
    assert any("cannot be loaded" in error for error in configuration_errors(settings))


def mtls_auth(**overrides: object) -> WebhookAuth:
    values: dict[str, object] = {**MTLS_VIA_PROXY, "qrcode_auth": ["mtls"]}
    values.update(overrides)
    return WebhookAuth(settings_for(**values), "qrcode")


def test_verified_header_from_the_trusted_proxy_passes() -> None:
    mtls_auth().check_request(make_request(PROXY, VERIFIED))


@pytest.mark.parametrize(
    ("peer", "headers"),
    [
        ("203.0.113.9", VERIFIED),  # forged: the header comes from the client itself
        (PROXY, []),
        (PROXY, [("X-SSL-Client-Verify", "FAILED:unable to get issuer certificate")]),
        (PROXY, [("X-SSL-Client-Verify", "NONE")]),
    ],
)
def test_unverified_or_forged_header_is_401(peer: str, headers: list[tuple[str, str]]) -> None:
    with pytest.raises(Problem) as refused:
        mtls_auth().check_request(make_request(peer, headers))
    assert (refused.value.status, refused.value.slug) == (401, "client-certificate-required")


def test_subject_must_be_allowed_when_configured() -> None:
    subject = "/O=Provider/CN=provider-webhooks"
    auth = mtls_auth(
        mtls_subject_header="X-SSL-Client-Subject",
        mtls_allowed_subjects=["/O=Provider/CN=old", subject],
    )
    auth.check_request(make_request(PROXY, [*VERIFIED, ("X-SSL-Client-Subject", subject)]))
    for headers in (VERIFIED, [*VERIFIED, ("X-SSL-Client-Subject", "/O=Other/CN=x")]):
        with pytest.raises(Problem) as refused:
            auth.check_request(make_request(PROXY, headers))
        assert (refused.value.status, refused.value.slug) == (401, "client-certificate-not-allowed")


def test_tls_terminated_here_passes_only_over_https(tmp_path: Path) -> None:
    # Configured for uvicorn's CERT_REQUIRED, but served over plain HTTP (a mistake in
    # how the app was deployed): refuse rather than believe the configuration.
    settings = settings_for(
        tls_certfile="cert.pem", tls_keyfile="key.pem", tls_client_ca="ca.pem", qrcode_auth=["mtls"]
    )
    auth = WebhookAuth(settings, "qrcode")
    auth.check_request(make_request(scheme="https"))
    with pytest.raises(Problem) as refused:
        auth.check_request(make_request(scheme="http"))
    assert refused.value.status == 401
