"""The provider's accounts (cash-out) API family, simulated: its own app, OAuth and state.

``provider.accounts`` (an ``AccountsState``) holds payouts, infractions, invoices,
customers and webhook registrations and reads the provider's Pix ledger;
``create_accounts_app(provider)`` serves it over HTTP on a base URL of its own.
"""

from sandbox.accounts.app import create_accounts_app
from sandbox.accounts.defaults import (
    DEFAULT_ACCOUNT_ID,
    DEFAULT_ACCOUNTS_CLIENT_ID,
    DEFAULT_ACCOUNTS_CLIENT_SECRET,
    DEFAULT_ACCOUNTS_PORT,
)
from sandbox.accounts.delivery import AccountsWebhookDeliverer, NotificationReport
from sandbox.accounts.notifications import (
    cashout_notification,
    infraction_notification,
    notification_key,
    receive_notification,
    refund_notification,
    transfer_notification,
)
from sandbox.accounts.state import AccountsState

__all__ = [
    "DEFAULT_ACCOUNTS_CLIENT_ID",
    "DEFAULT_ACCOUNTS_CLIENT_SECRET",
    "DEFAULT_ACCOUNTS_PORT",
    "DEFAULT_ACCOUNT_ID",
    "AccountsState",
    "AccountsWebhookDeliverer",
    "NotificationReport",
    "cashout_notification",
    "create_accounts_app",
    "infraction_notification",
    "notification_key",
    "receive_notification",
    "refund_notification",
    "transfer_notification",
]
