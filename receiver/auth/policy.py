"""Which defences guard which family of routes.

``PIXRECON_QRCODE_AUTH`` / ``PIXRECON_ACCOUNTS_AUTH`` name the defences a family requires,
all of which must pass; empty means every defence that is configured. Naming a defence
that is not configured is an error, never a silent pass.
"""

from __future__ import annotations

from collections.abc import Set
from typing import Literal, get_args

from reconcile.settings import Settings

Family = Literal["qrcode", "accounts"]
Defence = Literal["ip", "secret", "mtls", "hmac"]
FAMILIES: tuple[Family, ...] = get_args(Family)
DEFENCES: tuple[Defence, ...] = get_args(Defence)

_HOW_TO_CONFIGURE: dict[Defence, str] = {
    "ip": "PIXRECON_ALLOW_IPS is empty",
    "secret": "PIXRECON_WEBHOOK_SECRETS is empty",
    "mtls": (
        "neither TLS termination with a client CA (PIXRECON_TLS_CERTFILE, "
        "PIXRECON_TLS_KEYFILE, PIXRECON_TLS_CLIENT_CA) nor a proxy's verification header "
        "(PIXRECON_MTLS_VERIFIED_HEADER) is configured"
    ),
    "hmac": "PIXRECON_HMAC_SECRETS is empty",
}


def family_variable(family: Family) -> str:
    return f"PIXRECON_{family.upper()}_AUTH"


def _listed(settings: Settings, family: Family) -> list[str]:
    return settings.qrcode_auth if family == "qrcode" else settings.accounts_auth


def select_defences(
    settings: Settings, family: Family, available: Set[Defence], errors: list[str]
) -> frozenset[Defence]:
    listed = [name.strip().lower() for name in _listed(settings, family)]
    if not listed:
        return frozenset(available)
    variable = family_variable(family)
    selected: set[Defence] = set()
    for name in listed:
        defence = next((d for d in DEFENCES if d == name), None)
        if defence is None:
            errors.append(
                f"{variable}: unknown defence {name!r} (choose from {', '.join(DEFENCES)})"
            )
        elif defence not in available:
            errors.append(f"{variable} requires {defence!r} but {_HOW_TO_CONFIGURE[defence]}")
        else:
            selected.add(defence)
    return frozenset(selected)
