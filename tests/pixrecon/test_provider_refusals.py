"""A provider that refuses pixrecon's credentials: the poll and the night's run say which
settings to check, in one line, exit 2 — not "run it again", which would change nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from pixrecon.commands.common import provider_advice
from pixrecon.sandbox_wiring import sandbox_servers
from reconcile.provider.errors import AuthenticationFailed, Forbidden, ProviderUnavailable
from reconcile.settings import Settings
from sandbox.state import SandboxProvider
from tests.cli_support import clean_env, run_pixrecon


def test_the_advice_names_the_settings_of_the_configured_apis() -> None:
    qrcode = {
        "qrcode_api_url": "https://qr.example",
        "qrcode_client_id": "a",
        "qrcode_client_secret": "s",
    }
    accounts = {
        "accounts_api_url": "https://accounts.example",
        "accounts_client_id": "b",
        "accounts_client_secret": "s",
        "accounts_account_id": "1",
    }
    both = Settings.model_validate({**qrcode, **accounts})
    said = provider_advice(AuthenticationFailed("401"), both)
    assert "PIXRECON_QRCODE_CLIENT_ID and PIXRECON_QRCODE_CLIENT_SECRET" in said
    assert "PIXRECON_ACCOUNTS_CLIENT_ID and PIXRECON_ACCOUNTS_CLIENT_SECRET" in said
    only = Settings.model_validate(qrcode)
    assert "ACCOUNTS" not in provider_advice(AuthenticationFailed("401"), only)
    assert "permission" in provider_advice(Forbidden("403"), only)
    assert provider_advice(ProviderUnavailable("503"), only) == (
        "run it again once the provider answers"
    )
    # The API that refused, when its client says which, is the one whose settings to check.
    refused = AuthenticationFailed("401")
    refused.api = "accounts"
    said = provider_advice(refused, both)
    assert "PIXRECON_ACCOUNTS_CLIENT_ID and PIXRECON_ACCOUNTS_CLIENT_SECRET" in said
    assert "QRCODE" not in said


@pytest.mark.parametrize("args", [("poll", "--since", "2026-03-01T00:00:00Z"), ("poll",)])
@pytest.mark.parametrize(
    ("wrong", "named", "not_named"),
    [("qrcode", "QRCODE", "ACCOUNTS"), ("accounts", "ACCOUNTS", "QRCODE")],
)
def test_a_refusal_names_the_credentials_of_the_api_that_refused(
    tmp_path: Path, args: tuple[str, ...], wrong: str, named: str, not_named: str
) -> None:
    """Both APIs configured, one secret wrong: the line names that API's client id and
    secret only, not all four settings."""
    with sandbox_servers(SandboxProvider(seed=3)) as urls:
        fields = {**urls.fields(), f"{wrong}_client_secret": "wrong"}
        env = clean_env(database_url=f"sqlite:///{tmp_path / 'p.db'}", **fields)
        run_pixrecon("db", "upgrade", cwd=tmp_path, env=env)
        done = run_pixrecon(*args, cwd=tmp_path, env=env)
    assert done.returncode == 2, done.stderr
    said = " ".join(done.stderr.split())
    assert (
        f"the provider refused pixrecon's credentials: check PIXRECON_{named}_CLIENT_ID and "
        f"PIXRECON_{named}_CLIENT_SECRET (and the client certificate" in said
    ), said
    assert not_named not in said
    assert len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "args", [("poll", "--since", "2026-03-01T00:00:00Z"), ("reconcile", "--date", "2026-03-01")]
)
def test_refused_credentials_say_what_to_check(tmp_path: Path, args: tuple[str, ...]) -> None:
    with sandbox_servers(SandboxProvider(seed=3)) as urls:
        fields = {**urls.fields(), "qrcode_client_secret": "wrong"}
        fields.pop("accounts_api_url")
        env = clean_env(database_url=f"sqlite:///{tmp_path / 'p.db'}", **fields)
        run_pixrecon("db", "upgrade", cwd=tmp_path, env=env)
        done = run_pixrecon(*args, cwd=tmp_path, env=env)
    assert done.returncode == 2, done.stderr
    said = " ".join(done.stderr.split())
    assert "the provider refused pixrecon's credentials: check PIXRECON_QRCODE_CLIENT_ID" in said
    assert "ACCOUNTS" not in said
    assert len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr
