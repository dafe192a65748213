"""``POST /oauth/token`` of the sandbox, over real HTTP."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import httpx
import pytest
from starlette.applications import Starlette

from sandbox.app import create_app
from sandbox.defaults import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, DEFAULT_SCOPES
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider
from tests.sandbox.sandbox_support import served_app

GRANT = {"grant_type": "client_credentials"}


app, server = served_app(create_app)


@pytest.fixture
def provider(app: Starlette) -> SandboxProvider:
    # A fresh provider per test behind the one running server keeps tests independent.
    fresh = SandboxProvider(seed=1)
    fresh.register_client("reader", "reader-secret", {"pix.read"})
    app.state.provider = fresh
    return fresh


@pytest.fixture
def http(server: BackgroundServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url) as client:
        yield client


@pytest.mark.usefixtures("provider")
def test_basic_auth_gets_a_bearer_token_with_all_the_clients_scopes(http: httpx.Client) -> None:
    response = http.post(
        "/oauth/token", data=GRANT, auth=(DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET)
    )

    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"
    body = response.json()
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 300
    assert set(body["scope"].split()) == DEFAULT_SCOPES
    assert len(body["access_token"]) >= 32


@pytest.mark.usefixtures("provider")
def test_form_credentials_are_accepted(http: httpx.Client) -> None:
    response = http.post(
        "/oauth/token",
        data={**GRANT, "client_id": "reader", "client_secret": "reader-secret"},
    )
    assert response.status_code == 200
    assert response.json()["scope"] == "pix.read"


@pytest.mark.usefixtures("provider")
def test_url_encoded_basic_credentials_are_accepted(http: httpx.Client) -> None:
    # RFC 6749 §2.3.1 form-encodes the parts; "sandbox%2Dclient" decodes to the real id.
    raw = base64.b64encode(b"sandbox%2Dclient:sandbox-secret").decode()
    response = http.post("/oauth/token", data=GRANT, headers={"Authorization": f"Basic {raw}"})
    assert response.status_code == 200


def test_requested_scopes_narrow_the_token(http: httpx.Client, provider: SandboxProvider) -> None:
    response = http.post(
        "/oauth/token",
        data={**GRANT, "scope": "pix.read webhook.read"},
        auth=(DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET),
    )
    assert response.json()["scope"] == "pix.read webhook.read"
    token = provider.tokens.lookup(response.json()["access_token"])
    assert token is not None
    assert token.scopes == {"pix.read", "webhook.read"}


@pytest.mark.usefixtures("provider")
@pytest.mark.parametrize(
    "auth",
    [(DEFAULT_CLIENT_ID, "wrong"), ("nobody", DEFAULT_CLIENT_SECRET), None],
    ids=["bad-secret", "unknown-client", "no-credentials"],
)
def test_bad_credentials_are_401_invalid_client(
    http: httpx.Client, auth: tuple[str, str] | None
) -> None:
    response = http.post(
        "/oauth/token", data=GRANT, auth=auth if auth is not None else httpx.USE_CLIENT_DEFAULT
    )
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"
    assert response.headers["www-authenticate"].startswith("Basic")


@pytest.mark.usefixtures("provider")
def test_a_scope_beyond_the_clients_is_400_invalid_scope(http: httpx.Client) -> None:
    response = http.post(
        "/oauth/token",
        data={**GRANT, "scope": "pix.read pix.write"},
        auth=("reader", "reader-secret"),
    )
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_scope"


@pytest.mark.usefixtures("provider")
@pytest.mark.parametrize(
    ("data", "error"),
    [({}, "invalid_request"), ({"grant_type": "password"}, "unsupported_grant_type")],
)
def test_other_grants_are_refused(http: httpx.Client, data: dict[str, str], error: str) -> None:
    response = http.post("/oauth/token", data=data, auth=(DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET))
    assert response.status_code == 400
    assert response.json()["error"] == error


def test_token_lifetime_is_configurable(http: httpx.Client, provider: SandboxProvider) -> None:
    provider.token_lifetime_seconds = 2
    response = http.post(
        "/oauth/token", data=GRANT, auth=(DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET)
    )
    assert response.json()["expires_in"] == 2
    assert provider.tokens_issued == 1


def test_the_token_endpoint_can_be_made_to_fail(
    http: httpx.Client, provider: SandboxProvider
) -> None:
    provider.fail_next(1, status=429, retry_after=7, endpoint="token")
    auth = (DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET)

    first = http.post("/oauth/token", data=GRANT, auth=auth)
    second = http.post("/oauth/token", data=GRANT, auth=auth)

    assert first.status_code == 429
    assert first.headers["retry-after"] == "7"
    assert first.headers["content-type"] == "application/problem+json"
    assert second.status_code == 200
    assert provider.request_count("POST /oauth/token") == 2
