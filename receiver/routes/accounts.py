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
    # "type" takes it from there. A provider that appends the type to a URL registered
    # with one posts to /webhooks/accounts/{kind}/{more}: read as the body says.
    params = request.path_params
    kind, more = params.get("kind"), params.get("more")
    return accounts_items(document, f"{kind}/{more}" if more else kind)


def routes(ctx: ReceiverContext) -> list[BaseRoute]:
    endpoint = webhook_endpoint(ctx, WebhookAuth(ctx.settings, "accounts"), _accounts)
    return [
        webhook_route("/webhooks/accounts", endpoint, name="accounts"),
        webhook_route("/webhooks/accounts/{kind}", endpoint, name="accounts_kind"),
        # Never a 404 under the accounts URL: each one counts towards the provider
        # disabling the webhook, and the body says what it is.
        webhook_route("/webhooks/accounts/{kind}/{more:path}", endpoint, name="accounts_more"),
    ]
