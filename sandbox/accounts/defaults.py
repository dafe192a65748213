"""Demo identities and limits of the sandbox accounts (cash-out) API, kept in one place.

None of these is a secret: the demo, the docs and the tests all point here.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Final

from sandbox.defaults import DEFAULT_PORT

# The accounts family has OAuth clients of its own: a QR code API token is not valid here.
DEFAULT_ACCOUNTS_CLIENT_ID: Final = "sandbox-accounts-client"
DEFAULT_ACCOUNTS_CLIENT_SECRET: Final = "sandbox-accounts-secret"  # noqa: S105 - demo credential
DEFAULT_ACCOUNT_ID: Final = "sandbox-account-0001"

# The merchant's own account, shown as ``debtorAccount`` of its payouts.
DEFAULT_ACCOUNT_NUMBER: Final = "654321"
DEFAULT_ACCOUNT_ISSUER: Final = "0001"
DEFAULT_MERCHANT_DOCUMENT: Final = "11222333000181"
DEFAULT_MERCHANT_NAME: Final = "Loja Exemplo LTDA"

DEFAULT_OPENING_BALANCE: Final = Decimal("0.00")
DEFAULT_ACCOUNTS_TOKEN_LIFETIME_SECONDS: Final = 300.0
# Real token endpoints are rate limited per client; these are low enough that a client
# that fetches a token per request trips them in the demo.
DEFAULT_TOKEN_RATE_LIMIT: Final = 10
DEFAULT_TOKEN_RATE_WINDOW_SECONDS: Final = 60.0

DEFAULT_ACCOUNTS_PORT: Final = DEFAULT_PORT + 1
