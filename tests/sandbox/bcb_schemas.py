"""Validate sandbox answers against the BCB spec's schemas, with its known bugs patched.

Each patch below is a bug of the published specification (2.9.0), not a liberty of the
sandbox: without it, no conforming answer could validate.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import jsonschema

from sandbox.clock import parse_rfc3339
from tests.bcb_spec import bcb_spec


def _unslash_patterns(node: Any) -> None:
    """Spec bug: CPF (and ``codMun``) patterns are JavaScript literals, ``"/^\\d{11}$/"``,
    which as JSON Schema regexes demand literal slashes: no CPF matches them."""
    if isinstance(node, dict):
        pattern = node.get("pattern")
        if isinstance(pattern, str) and len(pattern) > 2 and pattern[0] == pattern[-1] == "/":
            node["pattern"] = pattern[1:-1]
        for value in node.values():
            _unslash_patterns(value)
    elif isinstance(node, list):
        for value in node:
            _unslash_patterns(value)


@functools.cache
def _components() -> dict[str, Any]:
    components: dict[str, Any] = copy.deepcopy(bcb_spec()["components"])
    _unslash_patterns(components)
    schemas = components["schemas"]
    # PixConsultados requires "cobs" (copied from CobsConsultadas) but defines "pix".
    consulted = schemas["PixConsultados"]
    consulted["required"] = ["pix" if key == "cobs" else key for key in consulted["required"]]
    # Charge lists require "idCob" of every item, a field the spec defines nowhere.
    for name in ("CobsConsultadas", "CobsVConsultadas"):
        items = schemas[name]["properties"]["cobs"]["items"]["allOf"]
        items[1]["required"] = [key for key in items[1]["required"] if key != "idCob"]
    # DadosRecebedor requires the address at the charge's top level; its inner
    # ``recebedor`` already requires it where it belongs.
    del schemas["DadosRecebedor"]["required"]
    # DadosPagadorRec requires "ispbParticipante" of the recurrence, not of its ``pagador``.
    del schemas["DadosPagadorRec"]["required"]
    schemas["DadosPagadorRec"]["properties"]["pagador"]["required"] = ["ispbParticipante"]
    # PixAutomatico.valor is a string constrained by object-only schemas (copied from
    # Pix.componentesValor): no string satisfies them.
    del schemas["PixAutomatico"]["properties"]["valor"]["anyOf"]
    # RecBase requires "retentativa", defined nowhere; "politicaRetentativa" (required by
    # RecConfiguracao) is the field.
    base = schemas["RecBase"]
    base["required"] = [key for key in base["required"] if key != "retentativa"]
    # "encerramento" is oneOf {rejeicao} / {cancelamento} with no required keys, so every
    # object matches both branches and none validates.
    for holder in (schemas["RecEncerramento"], schemas["CobRAtualizacao"]):
        for branch in holder["properties"]["encerramento"]["oneOf"]:
            branch["required"] = list(branch["properties"])
    # RecNotification requires 'atualizacao"', with a stray quote.
    notified = schemas["RecNotification"]
    notified["required"] = [key.rstrip('"') for key in notified["required"]]
    return components


_FORMATS = jsonschema.FormatChecker()
# jsonschema checks "date-time" only with an optional package; check it strictly here.
_FORMATS.checks("date-time")(lambda value: not isinstance(value, str) or bool(parse_rfc3339(value)))


def schema_errors(instance: Any, name: str) -> list[str]:
    """Violations of ``components.schemas[name]`` (empty when valid)."""
    return _errors(instance, f"#/components/schemas/{name}")


def request_body_errors(instance: Any, name: str) -> list[str]:
    """Violations of the JSON schema of ``components.requestBodies[name]``, e.g. a
    callback body such as ``WebhookRecBody``."""
    return _errors(instance, f"#/components/requestBodies/{name}/content/application~1json/schema")


def _errors(instance: Any, ref: str) -> list[str]:
    root = {"$ref": ref, "components": _components()}
    validator = jsonschema.Draft7Validator(root, format_checker=_FORMATS)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(instance)]
