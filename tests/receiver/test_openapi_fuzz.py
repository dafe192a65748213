"""The receiver's OpenAPI document against the receiver itself (schemathesis): bodies the
schema allows are accepted, bodies it forbids are refused, and nothing answers 5xx."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode

from pixrecon.node import Node
from reconcile.db import create_db_engine
from sandbox.server import BackgroundServer
from tests.conftest import SECRET, make_settings

WEBHOOKS = [
    "/webhooks/qrcode/pix",
    "/webhooks/qrcode",
    "/webhooks/qrcode/rec",
    "/webhooks/qrcode/cobr",
    "/webhooks/accounts",
    "/webhooks/accounts/{kind}",
]
# Routes whose schema says exactly what is accepted. The accounts schema leaves `data`
# open (its shape depends on `type`), so data the schema allows may still be refused.
EXACT = {
    "/webhooks/qrcode/pix",
    "/webhooks/qrcode",
    "/webhooks/qrcode/rec",
    "/webhooks/qrcode/cobr",
}
FUZZ = settings(
    max_examples=15,
    deadline=None,
    # Generation only: schemathesis strategies do not replay deterministically, so
    # shrinking reports flakiness instead of the failure; the assertion shows the body.
    phases=[Phase.generate],
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)


def _multiple_of(
    validator: Any, factor: float, instance: Any, schema: Any
) -> Iterator[jsonschema.ValidationError]:
    # Money is exact: 0.57 is a multiple of 0.01 even though 0.57 / 0.01 is not 57 in
    # floating point; the receiver reads numbers as Decimal, and so does this oracle.
    if not validator.is_type(instance, "number"):
        return
    try:
        exact = Decimal(instance) % Decimal(str(factor)) == 0
    except InvalidOperation:  # too large to divide: certainly not money
        exact = False
    if not exact:
        yield jsonschema.ValidationError(f"{instance} is not a multiple of {factor}")


ExactValidator = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    jsonschema.Draft202012Validator, {"multipleOf": _multiple_of}
)


@pytest.fixture(scope="module")
def server(sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("fuzz") / "fuzz.db"
    shutil.copy(sqlite_template, path)
    url = f"sqlite:///{path}"
    engine = create_db_engine(url)
    with Node(make_settings(url), engine) as node, BackgroundServer(node.app) as running:
        yield running.url
    engine.dispose()


@pytest.fixture(scope="module")
def document(server: str) -> dict[str, Any]:
    document: dict[str, Any] = httpx.get(server + "/openapi.json").json()
    assert set(WEBHOOKS) <= set(document["paths"])
    return document


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
@pytest.mark.parametrize("path", WEBHOOKS)
def test_schema_describes_what_is_accepted(
    server: str, document: dict[str, Any], path: str, mode: GenerationMode
) -> None:
    # Bodies are under test here, not authentication (tests/receiver/auth/ cover that);
    # without the security section schemathesis leaves the secret header alone.
    bodies_only = {k: v for k, v in document.items() if k != "security"}
    operation = schemathesis.openapi.from_dict(bodies_only)[path]["POST"]
    body_schema = document["paths"][path]["post"]["requestBody"]["content"]["application/json"]
    oracle = ExactValidator({**body_schema["schema"], "components": document["components"]})

    @FUZZ
    @given(case=operation.as_strategy(generation_mode=mode))
    def check(case: schemathesis.Case[Any]) -> None:
        case.headers["X-Webhook-Secret"] = SECRET
        response = case.call(base_url=server)
        assert response.status_code < 500, response.text
        json_body = case.media_type in (None, "application/json") and not isinstance(
            case.body, bytes
        )
        # What the server sees: the body as JSON text, numbers read exactly.
        sent = json.loads(json.dumps(case.body), parse_float=Decimal) if json_body else None
        valid = json_body and oracle.is_valid(sent)
        if mode is GenerationMode.POSITIVE and valid and path in EXACT:
            assert response.status_code == 200, (case.body, response.text)
        # A body of nothing but whitespace is a provider testing the URL: kept as a ping
        # and answered 200 (README, "what gets 2xx"), whatever the schema says of bodies.
        ping = isinstance(case.body, bytes) and not case.body.strip()
        if mode is GenerationMode.NEGATIVE and not valid and not ping:
            reasons = [e.message[:300] for e in oracle.iter_errors(sent)] if json_body else []
            # Refused, unless something in it could be kept by a key: the README's tolerant
            # reader keeps, say, a Pix whose endToEndId is unreadable whole for its refund's
            # rtrId, a body the schema forbids; such an answer says what it stored.
            kept = response.status_code == 200 and response.json()["items"] > 0
            assert response.status_code in (400, 415) or kept, (reasons, response.text)

    check()
