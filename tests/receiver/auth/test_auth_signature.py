"""Standard Webhooks HMAC signatures, checked against the specification's own example."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable

import pytest
from starlette.datastructures import Headers

from receiver.auth import WebhookAuth
from receiver.auth.signature import StandardWebhooks
from receiver.problems import Problem
from tests.receiver.auth.auth_support import make_request, settings_for, standard_signature

# The example published with the specification (and by Svix, its origin).
SPEC_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SPEC_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
SPEC_TIMESTAMP = "1614265330"
SPEC_BODY = b'{"test": 2432232314}'
SPEC_SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

OLD = "whsec_" + base64.b64encode(b"old key for pixrecon tests 0001").decode()
NEW = "whsec_" + base64.b64encode(b"new key for pixrecon tests 0002").decode()
NOW = 1_800_000_000
BODY = b'{"type":"TRANSFER","data":{"id":"1"}}'


def verifier(*secrets: str, now: float = NOW, tolerance: int = 300) -> StandardWebhooks:
    errors: list[str] = []
    checker = StandardWebhooks(list(secrets), tolerance, errors, clock=lambda: now)
    assert errors == []
    return checker


def headers(signature: str, *, message_id: str = "msg_1", timestamp: int = NOW) -> Headers:
    return Headers(
        {
            "webhook-id": message_id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": signature,
        }
    )


def sign(secret: str, body: bytes = BODY, timestamp: int = NOW) -> str:
    return standard_signature(secret, "msg_1", str(timestamp), body)


def refusal(call: Callable[[], None]) -> Problem:
    with pytest.raises(Problem) as refused:
        call()
    assert refused.value.status == 401
    return refused.value


def test_the_specification_example_verifies() -> None:
    assert standard_signature(SPEC_SECRET, SPEC_ID, SPEC_TIMESTAMP, SPEC_BODY) == SPEC_SIGNATURE
    checker = verifier(SPEC_SECRET, now=int(SPEC_TIMESTAMP) + 10)
    checker.verify(
        headers(SPEC_SIGNATURE, message_id=SPEC_ID, timestamp=int(SPEC_TIMESTAMP)), SPEC_BODY
    )


def test_a_raw_secret_is_used_as_is() -> None:
    raw_b64 = base64.b64encode(b"plain-shared-secret").decode()
    signature = standard_signature("whsec_" + raw_b64, "msg_1", str(NOW), BODY)
    verifier("plain-shared-secret").verify(headers(signature), BODY)


def test_forged_signature_and_tampered_body_are_refused() -> None:
    checker = verifier(NEW)
    forged = sign("whsec_" + base64.b64encode(b"attacker key").decode())
    assert refusal(lambda: checker.verify(headers(forged), BODY)).slug == "invalid-signature"
    tampered = BODY.replace(b'"1"', b'"2"')
    problem = refusal(lambda: checker.verify(headers(sign(NEW)), tampered))
    assert problem.slug == "invalid-signature"


def test_the_signed_id_cannot_be_swapped() -> None:
    swapped = headers(sign(NEW), message_id="msg_2")
    assert refusal(lambda: verifier(NEW).verify(swapped, BODY)).slug == "invalid-signature"


@pytest.mark.parametrize("skew", [-301, 301, -10_000])
def test_timestamps_outside_the_tolerance_are_stale(skew: int) -> None:
    checker = verifier(NEW, now=NOW + skew)
    problem = refusal(lambda: checker.verify(headers(sign(NEW)), BODY))
    assert problem.slug == "stale-signature"


@pytest.mark.parametrize("skew", [-300, 0, 300])
def test_timestamps_inside_the_tolerance_pass(skew: int) -> None:
    verifier(NEW, now=NOW + skew).verify(headers(sign(NEW)), BODY)


def test_one_valid_among_several_signatures_is_enough() -> None:
    bogus = "v1," + base64.b64encode(b"x" * 32).decode()
    several = f"v1a,ignored-asymmetric {bogus} v1,not-base64!! {sign(NEW)}"
    verifier(NEW).verify(headers(several), BODY)


@pytest.mark.parametrize("signer", [OLD, NEW])
def test_rotated_secrets_are_all_accepted(signer: str) -> None:
    verifier(OLD, NEW).verify(headers(sign(signer)), BODY)


@pytest.mark.parametrize("missing", ["webhook-id", "webhook-timestamp", "webhook-signature"])
def test_missing_headers_are_401(missing: str) -> None:
    incomplete = Headers({k: v for k, v in headers(sign(NEW)).items() if k != missing})
    problem = refusal(lambda: verifier(NEW).verify(incomplete, BODY))
    assert problem.slug == "unauthenticated"
    assert missing in problem.detail


@pytest.mark.parametrize(
    ("signature_header", "timestamp"),
    [("v2,abc", str(NOW)), ("", str(NOW)), ("v1,abc", "yesterday")],
)
def test_unusable_headers_are_401(signature_header: str, timestamp: str) -> None:
    malformed = Headers(
        {"webhook-id": "msg_1", "webhook-timestamp": timestamp, "webhook-signature": "x"}
        | ({"webhook-signature": signature_header} if signature_header else {})
    )
    refusal(lambda: verifier(NEW).verify(malformed, BODY))


def test_details_never_name_a_secret() -> None:
    problem = refusal(lambda: verifier(OLD, NEW).verify(headers(sign("whsec_QUJD")), BODY))
    assert OLD not in problem.detail
    assert NEW not in problem.detail


def test_check_body_verifies_for_a_family_that_requires_hmac() -> None:
    auth = WebhookAuth(settings_for(hmac_secrets=[NEW], accounts_auth=["hmac"]), "accounts")
    now = int(time.time())
    signed = headers(sign(NEW, timestamp=now), timestamp=now)
    request = make_request(headers=list(signed.items()))
    auth.check_request(request)  # HMAC needs the body: nothing to check before it
    auth.check_body(request, BODY)
    assert refusal(lambda: auth.check_body(request, BODY + b" ")).slug == "invalid-signature"


def test_invalid_whsec_secret_is_a_configuration_error_without_echoing_it() -> None:
    errors: list[str] = []
    StandardWebhooks(["whsec_not base64!!", NEW], 300, errors)
    assert errors == ["PIXRECON_HMAC_SECRETS: secret #1 is not valid base64"]


def test_a_timestamp_in_milliseconds_is_named_as_such() -> None:
    """Off by centuries, not by a clock's drift: the refusal says which."""
    in_ms = NOW * 1000 + 123
    checker = verifier(NEW)
    problem = refusal(
        lambda: checker.verify(headers(sign(NEW, timestamp=in_ms), timestamp=in_ms), BODY)
    )
    assert problem.slug == "stale-signature"
    assert "reads as milliseconds" in problem.detail
    drifted = refusal(lambda: verifier(NEW, now=NOW + 301).verify(headers(sign(NEW)), BODY))
    assert "milliseconds" not in drifted.detail
