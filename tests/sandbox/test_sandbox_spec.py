"""Sandbox answers validated against the schemas of the BCB Pix API specification."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import jsonschema
import pytest

from sandbox.app import create_app
from sandbox.defaults import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider
from tests.bcb_spec import bcb_spec
from tests.sandbox.sandbox_support import token_client

WINDOW = {"inicio": "2000-01-01T00:00:00Z", "fim": "2100-01-01T00:00:00Z"}


def _validate(instance: Any, name: str) -> None:
    components = copy.deepcopy(bcb_spec()["components"])
    # Spec bug: PixConsultados requires "cobs" (copied from CobsConsultadas) but defines
    # and documents "pix"; every real PSP answers "pix".
    consulted = components["schemas"]["PixConsultados"]
    consulted["required"] = ["pix" if key == "cobs" else key for key in consulted["required"]]
    root = {"$ref": f"#/components/schemas/{name}", "components": components}
    validator = jsonschema.Draft7Validator(
        root, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER
    )
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(instance)]
    assert errors == []


@pytest.fixture(scope="module")
def provider() -> SandboxProvider:
    provider = SandboxProvider(seed=8)
    # The spec's TxId pattern asks for 26-35 characters for charge txids.
    pix = provider.receive_pix(Decimal("110.00"), txid="a" * 32, info_pagador="pedido 1")
    provider.refund_pix(pix["endToEndId"], Decimal("10.00"), status="EM_PROCESSAMENTO")
    provider.receive_pix(Decimal("0.01"), payer_cnpj="12345678000195")
    return provider


@pytest.fixture(scope="module")
def http(provider: SandboxProvider) -> Iterator[httpx.Client]:
    with (
        BackgroundServer(create_app(provider)) as server,
        token_client(server, DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET) as client,
    ):
        yield client


def test_get_pix_matches_the_pix_schema(http: httpx.Client, provider: SandboxProvider) -> None:
    for pix in provider.all_pix():
        response = http.get(f"/pix/{pix['endToEndId']}")
        _validate(response.json(), "Pix")


def test_list_matches_the_pix_consultados_schema(http: httpx.Client) -> None:
    response = http.get("/pix", params={**WINDOW, "paginacao.itensPorPagina": 1})
    body = response.json()
    assert len(body["pix"]) == 1
    _validate(body, "PixConsultados")


def test_errors_match_the_problema_schema(http: httpx.Client) -> None:
    _validate(http.get("/pix/E00000000202401010000aaaaaaaaaaa").json(), "Problema")
    _validate(http.get("/pix", params={"inicio": "x"}).json(), "Problema")
