"""Clients built from settings speak mutual TLS, each API family with its own identity:
the certificate of one family does not open the other."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import trustme

from reconcile.provider import factory
from reconcile.provider.errors import ProviderUnavailable
from reconcile.settings import Settings
from reconcile.timeutil import utcnow
from sandbox.accounts import (
    DEFAULT_ACCOUNT_ID,
    DEFAULT_ACCOUNTS_CLIENT_ID,
    DEFAULT_ACCOUNTS_CLIENT_SECRET,
    create_accounts_app,
)
from sandbox.app import create_app
from sandbox.defaults import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider


@dataclass
class Identity:
    cert: str
    key: str


def _identity(ca: trustme.CA, folder: Path, name: str) -> Identity:
    issued = ca.issue_cert(f"{name}.merchant.example")
    cert, key = folder / f"{name}.pem", folder / f"{name}.key"
    issued.cert_chain_pems[0].write_to_path(str(cert))
    issued.private_key_pem.write_to_path(str(key))
    return Identity(str(cert), str(key))


@dataclass
class Pki:
    server_ca: str
    pix: Identity
    accounts: Identity
    qrcode_url: str
    accounts_url: str


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pki]:
    folder = tmp_path_factory.mktemp("families")
    server_ca = trustme.CA()
    # One client CA per family, as the provider issues them: each server trusts only its own.
    pix_ca, accounts_ca = trustme.CA(), trustme.CA()
    server = server_ca.issue_cert("127.0.0.1")
    server_cert, server_key = folder / "server.pem", folder / "server.key"
    server.cert_chain_pems[0].write_to_path(str(server_cert))
    server.private_key_pem.write_to_path(str(server_key))
    server_ca.cert_pem.write_to_path(str(folder / "server-ca.pem"))
    pix_ca.cert_pem.write_to_path(str(folder / "pix-ca.pem"))
    accounts_ca.cert_pem.write_to_path(str(folder / "accounts-ca.pem"))
    provider = SandboxProvider(seed=2)
    provider.receive_pix(Decimal("9.99"))

    def serve(app: Any, client_ca: str) -> BackgroundServer:
        return BackgroundServer(
            app,
            ssl_certfile=str(server_cert),
            ssl_keyfile=str(server_key),
            ssl_ca_certs=client_ca,
            ssl_cert_reqs=ssl.CERT_REQUIRED,
        )

    with (
        serve(create_app(provider), str(folder / "pix-ca.pem")) as qrcode,
        serve(create_accounts_app(provider), str(folder / "accounts-ca.pem")) as accounts,
    ):
        yield Pki(
            server_ca=str(folder / "server-ca.pem"),
            pix=_identity(pix_ca, folder, "pix"),
            accounts=_identity(accounts_ca, folder, "accounts"),
            qrcode_url=qrcode.url,
            accounts_url=accounts.url,
        )


def _settings(pki: Pki, pix: Identity, accounts: Identity) -> Settings:
    return Settings(
        _env_file=None,
        qrcode_api_url=pki.qrcode_url,
        qrcode_client_id=DEFAULT_CLIENT_ID,
        qrcode_client_secret=DEFAULT_CLIENT_SECRET,
        qrcode_client_cert=pix.cert,
        qrcode_client_key=pix.key,
        qrcode_ca_bundle=pki.server_ca,
        accounts_api_url=pki.accounts_url,
        accounts_client_id=DEFAULT_ACCOUNTS_CLIENT_ID,
        accounts_client_secret=DEFAULT_ACCOUNTS_CLIENT_SECRET,
        accounts_account_id=DEFAULT_ACCOUNT_ID,
        accounts_client_cert=accounts.cert,
        accounts_client_key=accounts.key,
        accounts_ca_bundle=pki.server_ca,
    )


def test_each_family_authenticates_with_its_own_certificate(pki: Pki) -> None:
    settings = _settings(pki, pki.pix, pki.accounts)
    pix, accounts = factory.qrcode_api(settings), factory.accounts_api(settings)
    assert pix is not None
    assert accounts is not None
    (listed,) = list(pix.list_received_pix(*_day()))
    assert listed["valor"] == "9.99"
    assert accounts.get_balance() == Decimal("9.99")


def test_the_other_familys_certificate_is_refused(pki: Pki) -> None:
    swapped = _settings(pki, pki.accounts, pki.pix)
    pix = factory.qrcode_api(swapped)
    assert pix is not None
    with pytest.raises(ProviderUnavailable):
        list(pix.list_received_pix(*_day()))


def _day() -> tuple[datetime, datetime]:
    now = utcnow()
    return now - timedelta(hours=1), now + timedelta(hours=1)


@pytest.mark.parametrize(
    ("names", "says"),
    [
        (
            {"accounts_ca_bundle": "{tmp}/nowhere.pem"},
            "PIXRECON_ACCOUNTS_CA_BUNDLE={tmp}/nowhere.pem: no such file",
        ),
        (
            {"accounts_ca_bundle": "{tmp}/empty.pem"},
            "PIXRECON_ACCOUNTS_CA_BUNDLE={tmp}/empty.pem: not a usable PEM file",
        ),
        (
            {"accounts_client_cert": "{tmp}/nowhere.pem", "accounts_client_key": "{tmp}/key.pem"},
            "PIXRECON_ACCOUNTS_CLIENT_CERT={tmp}/nowhere.pem / "
            "PIXRECON_ACCOUNTS_CLIENT_KEY={tmp}/key.pem: no such file",
        ),
        (
            {"accounts_client_key": "{tmp}/key.pem"},
            "PIXRECON_ACCOUNTS_CLIENT_KEY is set, but PIXRECON_ACCOUNTS_CLIENT_CERT is not",
        ),
        (
            {"accounts_client_cert": "{tmp}/empty.pem"},
            "PIXRECON_ACCOUNTS_CLIENT_CERT={tmp}/empty.pem / PIXRECON_ACCOUNTS_CLIENT_KEY "
            "unset, so the key is read from that file: not a usable PEM file",
        ),
    ],
    ids=["ca-missing", "ca-empty", "cert-missing", "key-without-cert", "cert-without-key"],
)
def test_a_tls_file_that_cannot_be_used_is_named_with_its_setting(
    tmp_path: Path, names: dict[str, str], says: str
) -> None:
    (tmp_path / "empty.pem").write_text("")
    settings = Settings.model_validate(
        {
            "accounts_api_url": "https://accounts.provider.example",
            "accounts_client_id": "client",
            "accounts_client_secret": "secret",
            "accounts_account_id": "account",
            **{name: value.format(tmp=tmp_path) for name, value in names.items()},
        }
    )
    with pytest.raises(factory.ProviderTlsError) as refused:
        factory.accounts_api(settings)
    assert str(refused.value).startswith(says.format(tmp=tmp_path))
