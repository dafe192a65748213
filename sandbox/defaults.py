"""Demo credentials and identities of the simulated provider, kept in one place.

The demo, the docs and the tests all point at these, so changing a value here changes it
everywhere; none of them is a secret.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

DEFAULT_CLIENT_ID: Final = "sandbox-client"
DEFAULT_CLIENT_SECRET: Final = "sandbox-secret"  # noqa: S105 - public demo credential
DEFAULT_SCOPES: Final = frozenset(
    {
        "pix.read",
        "pix.write",
        "cob.read",
        "cob.write",
        "cobv.read",
        "cobv.write",
        "rec.read",
        "cobr.read",
        "webhook.read",
        "webhook.write",
        "webhookrec.read",
        "webhookrec.write",
        "webhookcobr.read",
        "webhookcobr.write",
    }
)

# Tokens of real providers live minutes; short enough that the client's refresh path runs
# during a demo.
DEFAULT_TOKEN_LIFETIME_SECONDS: Final = 300.0

# The sandbox PSP's ISPB (8 digits, the prefix of every endToEndId it creates) and the
# merchant's Pix key (an EVP, the random-key kind).
DEFAULT_ISPB: Final = "99999008"
DEFAULT_PIX_KEY: Final = "7d9f0335-8dcc-4054-9bf9-0dbd61d36906"

DEFAULT_PAYER_NAME: Final = "Fulano de Tal"

# The merchant (the PSP's "usuário recebedor"): due-date charges and recurrences name it,
# and recurring charges carry the account that Pix Automático credits.
DEFAULT_MERCHANT: Final = MappingProxyType(
    {
        "cnpj": "12345678000195",
        "nome": "Loja Exemplo Ltda",
        "logradouro": "Rua Exemplo 100",
        "cidade": "Sao Paulo",
        "uf": "SP",
        "cep": "01001000",
    }
)
DEFAULT_MERCHANT_ACCOUNT: Final = MappingProxyType(
    {"agencia": "0001", "conta": "1234567", "tipoConta": "CORRENTE"}
)
# Host of the payload locations (a charge's ``location``) the sandbox hands out.
DEFAULT_LOCATION_HOST: Final = "pix.sandbox.example"

DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8001
