"""The receiver's own OpenAPI description, generated from the payload models it reads
with, so the document cannot drift from the behaviour: a delivery needs one item with its
business key, as specified (an item without it, beside readable ones, is kept whole as
unsupported); every other field is documented, and accepted whatever its shape (it is kept
raw and flagged)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from receiver.probe import ALLOW, ANSWER
from reconcile.payloads.accounts import DATA_MODELS
from reconcile.payloads.automatico import (
    COBR_FIELDS,
    REC_FIELDS,
    CobRNotification,
    RecNotification,
)
from reconcile.payloads.pix import PIX_FIELDS, Devolucao, PixItem

REF = "#/components/schemas/{model}"
ERRORS = {
    "400": "malformed JSON, or an item without its business key (see `violations`)",
    "401": "missing or invalid webhook credentials (secret, client certificate, signature)",
    "403": "the client address is not allowed",
    "408": "the body did not arrive within PIXRECON_BODY_TIMEOUT_SECONDS; nothing was stored",
    "413": "body too large",
    "415": "the body is not JSON",
    "500": "a fault of the receiver's own; nothing was acknowledged, retry",
    "503": "storage unavailable or overloaded; nothing was accepted, retry after `Retry-After`",
}
# Where no shape of the route fits, the body is stored whole as `unsupported`, and accepted.
NOT_A_CONTAINER = {"not": {"type": ["array", "object"]}}


def _schemas() -> dict[str, Any]:
    models: list[type[BaseModel]] = [
        PixItem,
        Devolucao,
        RecNotification,
        CobRNotification,
        *{model.__name__: model for model in DATA_MODELS.values()}.values(),
    ]
    _, definitions = models_json_schema(
        [(model, "validation") for model in models], ref_template=REF
    )
    schemas: dict[str, Any] = definitions.get("$defs", {})
    schemas["Accepted"] = {
        "type": "object",
        "required": ["items", "new", "duplicates"],
        "properties": {
            "items": {"type": "integer", "description": "items in the delivery"},
            "new": {"type": "integer", "description": "items seen for the first time"},
            "duplicates": {"type": "integer", "description": "items already known"},
        },
    }
    schemas["Probed"] = {
        "type": "object",
        "required": sorted(ANSWER),
        "properties": {
            "status": {"const": ANSWER["status"]},
            "method": {"const": ANSWER["method"], "description": "the method deliveries use"},
            "stored": {"const": ANSWER["stored"], "description": "a probe stores nothing"},
            "detail": {"type": "string"},
        },
        "examples": [ANSWER],
    }
    schemas["Problem"] = {
        "type": "object",
        "required": ["type", "title", "status", "detail"],
        "properties": {
            "type": {"type": "string"},
            "title": {"type": "string"},
            "status": {"type": "integer"},
            "detail": {"type": "string"},
            "request_id": {"type": "string"},
            "violations": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["property", "message"],
                    "properties": {
                        "property": {"type": "string", "description": "JSON pointer"},
                        "message": {"type": "string"},
                    },
                },
            },
        },
    }
    return schemas


def _ref(name: str) -> dict[str, str]:
    return {"$ref": REF.format(model=name)}


def _webhook(summary: str, body_schema: dict[str, Any]) -> dict[str, Any]:
    responses: dict[str, Any] = {
        "200": {
            "description": "stored durably (answered only after commit)",
            "content": {"application/json": {"schema": _ref("Accepted")}},
        }
    }
    for status, description in ERRORS.items():
        responses[status] = {
            "description": description,
            "content": {"application/problem+json": {"schema": _ref("Problem")}},
        }
    return {
        "post": {
            "summary": summary,
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": body_schema}},
            },
            "responses": responses,
        },
        **_probes(),
    }


PROBE = (
    "a provider checking the URL (when it is registered, say): nothing is read or stored, and"
    " no credential is asked for — the answer is the same for everyone and says only that"
    " the URL takes POST"
)


def _probes() -> dict[str, Any]:
    """GET, HEAD and OPTIONS, which every webhook path answers (receiver/probe.py)."""
    allow = {"Allow": {"schema": {"type": "string", "const": ALLOW}}}
    ok = {
        "description": "the URL works; nothing was stored",
        "headers": allow,
        "content": {"application/json": {"schema": _ref("Probed")}},
    }
    return {
        "get": {"summary": PROBE, "responses": {"200": ok}, "security": []},
        "head": {
            "summary": PROBE,
            "responses": {"200": {"description": "as GET, without the body", "headers": allow}},
            "security": [],
        },
        "options": {
            "summary": PROBE,
            "responses": {"204": {"description": "the methods the URL takes", "headers": allow}},
            "security": [],
        },
    }


def _some_of(one: dict[str, Any]) -> dict[str, Any]:
    """An array of items, empty or with at least one readable: the others are kept whole as
    unsupported. Only an array of which none can be read is refused."""
    return {"type": "array", "anyOf": [{"maxItems": 0}, {"contains": one}]}


def _family_body(
    wrapper: str, item: str, fields: frozenset[str], description: str
) -> dict[str, Any]:
    """``{wrapper: [...]}``, ``{wrapper: {...}}``, a flat item or a bare array of items
    (docs/design.md §4), also inside one ``data`` or ``payload`` envelope; a flat object or
    an array with none of an item's ``fields`` is no item, and like anything else is kept
    as unsupported."""
    one = _ref(item)
    looks_like = {"type": "object", "anyOf": [{"required": [name]} for name in sorted(fields)]}
    wrapped = {
        "type": "object",
        "required": [wrapper],
        "properties": {wrapper: {"anyOf": [_some_of(one), one, NOT_A_CONTAINER]}},
    }

    def enveloped(name: str) -> dict[str, Any]:
        return {"required": [name], "properties": {name: {"type": "object", "required": [wrapper]}}}

    return {
        "description": description,
        "anyOf": [
            wrapped,
            {"allOf": [one, looks_like, {"not": {"required": [wrapper]}}]},
            _some_of(one),
            NOT_A_CONTAINER,
            {"type": "array", "not": {"contains": looks_like}},
            {
                "type": "object",
                "not": {"anyOf": [looks_like, {"required": [wrapper]}]},
                "if": enveloped("data"),
                "then": {"properties": {"data": wrapped}},
                "else": {"if": enveloped("payload"), "then": {"properties": {"payload": wrapped}}},
            },
        ],
    }


def _any_case(word: str) -> str:
    return "^" + "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else c for c in word) + "$"


def _accounts_body() -> dict[str, Any]:
    """A known ``type`` needs its object(s), under ``data`` or ``payload``, each with its key;
    any other body is kept as unsupported."""
    rules = []
    for name, model in DATA_MODELS.items():
        data = _ref(model.__name__)
        slot = {"anyOf": [data, _some_of(data), NOT_A_CONTAINER]}
        rules.append(
            {
                "if": {
                    "type": "object",
                    "required": ["type"],
                    "properties": {"type": {"type": "string", "pattern": _any_case(name)}},
                },
                "then": {
                    "anyOf": [
                        {"required": ["data"], "properties": {"data": slot}},
                        {
                            "not": {"required": ["data"]},
                            "required": ["payload"],
                            "properties": {"payload": slot},
                        },
                        {"not": {"anyOf": [{"required": ["data"]}, {"required": ["payload"]}]}},
                    ]
                },
            }
        )
    return {
        "description": (
            '{"type": T, "data": {...}}; data may also come as an array (one item each) or '
            "under payload. Types other than " + ", ".join(DATA_MODELS) + " are stored as "
            "unsupported and acknowledged"
        ),
        "allOf": rules,
    }


def build_openapi(secret_header: str) -> dict[str, Any]:
    pix_body = _family_body(
        "pix", "PixItem", PIX_FIELDS, "the BCB body, and the shapes real deliveries also use"
    )
    pix = _webhook("BCB Pix callback (Pix received and their refunds)", pix_body)
    bare = _webhook(
        "the registered URL itself: the Pix callback; recurrences or recurring charges when"
        ' the body wraps them ({"recs": ...}, {"cobsr": ...}) or the query string ends in'
        " /rec or /cobr (a URL registered as .../webhooks/qrcode?ignorar=)",
        pix_body,
    )
    accounts = _webhook(
        "Accounts API notification; unknown types are stored as unsupported", _accounts_body()
    )
    accounts_kind = {
        **_webhook(
            "Accounts API notification registered per type; `type` defaults to {kind}",
            _accounts_body(),
        ),
        "parameters": [
            {
                "name": "kind",
                "in": "path",
                "required": True,
                "schema": {"type": "string"},
                "description": "notification type, used when the body has no `type`",
            }
        ],
    }
    accounts_more = {
        **_webhook(
            "Accounts API notification at a URL registered per type to which the provider"
            " appended a type (`/webhooks/accounts/transfer/receive`): read as the body says,"
            " flagged where the path names another type; a body without `type` takes the"
            " last type the path names",
            _accounts_body(),
        ),
        "parameters": [
            {
                "name": name,
                "in": "path",
                "required": True,
                "schema": {"type": "string"},
                "description": what,
            }
            for name, what in (
                ("kind", "the first segment after /webhooks/accounts/"),
                ("more", "the segments after it, separated by /"),
            )
        ],
    }
    health = {
        "get": {
            "summary": (
                "for monitoring: 200 when healthy; 503 when the database is down, inbox items "
                "wait too long or a periodic job has not succeeded for too long (`problems`)"
            ),
            "responses": {"200": {"description": "healthy"}, "503": {"description": "not"}},
            "security": [],  # unauthenticated
        }
    }
    ready = {
        "get": {
            "summary": (
                "for load balancers: 200 when the database answers a trivial query within a "
                "short timeout, else 503; never for lag or periodic jobs"
            ),
            "responses": {"200": {"description": "ready"}, "503": {"description": "not"}},
            "security": [],  # unauthenticated
        }
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "pixrecon receiver", "version": "1"},
        "paths": {
            "/webhooks/qrcode/pix": pix,
            "/webhooks/qrcode": bare,
            "/webhooks/qrcode/rec": _webhook(
                "Pix Automático recurrences",
                _family_body(
                    "recs", "RecNotification", REC_FIELDS, "the BCB WebhookRecBody, and variants"
                ),
            ),
            "/webhooks/qrcode/cobr": _webhook(
                "Pix Automático recurring charges",
                _family_body(
                    "cobsr",
                    "CobRNotification",
                    COBR_FIELDS,
                    "the BCB WebhookCobRBody, and variants",
                ),
            ),
            "/webhooks/accounts": accounts,
            "/webhooks/accounts/{kind}": accounts_kind,
            "/webhooks/accounts/{kind}/{more}": accounts_more,
            "/healthz": health,
            "/readyz": ready,
        },
        "components": {
            "schemas": _schemas(),
            "securitySchemes": {
                "webhookSecret": {"type": "apiKey", "in": "header", "name": secret_header}
            },
        },
        "security": [{"webhookSecret": []}],
    }
