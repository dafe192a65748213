"""The accounts (cash-out) API notifications: ``{"type": T, "data": {...}}``."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.routing import BaseRoute

from receiver.auth import WebhookAuth
from receiver.ingest import ReceiverContext, webhook_endpoint
from receiver.probe import webhook_route
from reconcile.inbox import NewItem
from reconcile.payloads.accounts import accounts_items


def _accounts(document: Any, request: Request) -> list[NewItem]:
    # Per-type registrations may point at /webhooks/accounts/{kind}; a body without
    # "type" takes it from there.
    kind = request.path_params.get("kind")
    return accounts_items(document, kind if isinstance(kind, str) else None)


def routes(ctx: ReceiverContext) -> list[BaseRoute]:
    endpoint = webhook_endpoint(ctx, WebhookAuth(ctx.settings, "accounts"), _accounts)
    return [
        webhook_route("/webhooks/accounts", endpoint, name="accounts"),
        webhook_route("/webhooks/accounts/{kind}", endpoint, name="accounts_kind"),
    ]
