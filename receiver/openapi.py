"""The receiver's own OpenAPI description, generated from the payload models it validates
with, so the document cannot drift from the behaviour."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from reconcile.payloads.accounts import AccountsNotification, AccountsNotificationForKind
from reconcile.payloads.automatico import CobRCallback, RecCallback
from reconcile.payloads.pix import PixCallback, PixItem

REF = "#/components/schemas/{model}"
ERRORS = {
    "400": "malformed JSON, wrong body shape or schema violations (see `violations`)",
    "401": "missing or invalid webhook credentials (secret, client certificate, signature)",
    "403": "the client address is not allowed",
    "413": "body too large",
    "415": "the body is not JSON",
    "503": "storage unavailable; nothing was accepted, retry after `Retry-After`",
}


def _schemas() -> dict[str, Any]:
    models: list[type[BaseModel]] = [
        PixCallback,
        PixItem,
        RecCallback,
        CobRCallback,
        AccountsNotification,
        AccountsNotificationForKind,
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
        }
    }


def build_openapi(secret_header: str) -> dict[str, Any]:
    pix_body = {
        "description": "the BCB body, and the shapes real deliveries also use",
        "anyOf": [
            _ref("PixCallback"),
            {"type": "object", "required": ["pix"], "properties": {"pix": _ref("PixItem")}},
            _ref("PixItem"),
            {"type": "array", "items": _ref("PixItem")},
        ],
    }
    pix = _webhook("BCB Pix callback (Pix received and their refunds)", pix_body)
    accounts = _webhook(
        "Accounts API notification; unknown types are stored as unsupported",
        _ref("AccountsNotification"),
    )
    accounts_kind = {
        **_webhook(
            "Accounts API notification registered per type; `type` defaults to {kind}",
            _ref("AccountsNotificationForKind"),
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
    health = {
        "get": {
            "summary": "200 when healthy; 503 when the database is down or work piles up",
            "responses": {"200": {"description": "healthy"}, "503": {"description": "not"}},
        }
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "pixrecon receiver", "version": "1"},
        "paths": {
            "/webhooks/qrcode/pix": pix,
            "/webhooks/qrcode": pix,
            "/webhooks/qrcode/rec": _webhook("Pix Automático recurrences", _ref("RecCallback")),
            "/webhooks/qrcode/cobr": _webhook(
                "Pix Automático recurring charges", _ref("CobRCallback")
            ),
            "/webhooks/accounts": accounts,
            "/webhooks/accounts/{kind}": accounts_kind,
            "/healthz": health,
        },
        "components": {
            "schemas": _schemas(),
            "securitySchemes": {
                "webhookSecret": {"type": "apiKey", "in": "header", "name": secret_header}
            },
        },
        "security": [{"webhookSecret": []}],
    }
