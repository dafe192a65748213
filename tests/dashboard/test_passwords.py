"""Password hashes for PIXRECON_DASHBOARD_USERS: scrypt with a salt, in a string that
survives shells, Compose files and the setting's own separators."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dashboard.passwords import (
    HashFormatError,
    PasswordHash,
    authenticate,
    hash_password,
    parse_users,
)
from reconcile.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def test_a_hash_verifies_its_password_only() -> None:
    hashed = hash_password("s3nha forte")
    assert hashed.startswith("scrypt.16384.8.1.")
    assert not set("$,: ") & set(hashed)
    parsed = PasswordHash.parse(hashed)
    assert parsed.matches("s3nha forte")
    assert not parsed.matches("s3nha fraca")
    # Salted: the same password never hashes the same way twice.
    assert hash_password("s3nha forte") != hashed


def test_users_are_read_from_the_setting() -> None:
    line = f"alice:{hash_password('a')},bob:{hash_password('b')}"
    settings = Settings(_env_file=None, dashboard_users=line)
    users = parse_users(settings.dashboard_users)
    assert set(users) == {"alice", "bob"}
    assert authenticate(users, "alice", "a")
    assert not authenticate(users, "alice", "b")
    assert not authenticate(users, "carol", "a")


@pytest.mark.parametrize(
    "hashed",
    ["plain-text", "scrypt.16384.8.1.c2FsdA", "scrypt.1000.8.1.c2FsdHNhbHQ.a2V5a2V5a2V5a2V5a2V5"],
)
def test_a_malformed_hash_names_its_user_not_the_hash(hashed: str) -> None:
    with pytest.raises(HashFormatError, match="user 'alice'") as caught:
        parse_users([f"alice:{hashed}"])
    assert hashed not in str(caught.value)


@pytest.mark.parametrize("line", ["alice", "al ice:scrypt.x", ":scrypt.x", "alice:"])
def test_a_malformed_user_entry_is_a_setting_error(line: str) -> None:
    with pytest.raises(ValueError, match="NAME:HASH"):
        Settings(_env_file=None, dashboard_users=line)


def test_a_short_secret_is_a_setting_error() -> None:
    with pytest.raises(ValueError, match="at least 32"):
        Settings(_env_file=None, dashboard_secret="short")
    unset = Settings(_env_file=None, dashboard_secret="")
    assert unset.dashboard_secret is None


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "dashboard", "hash-password", "alice"],
        [sys.executable, "-m", "pixrecon", "dashboard", "hash-password", "alice"],
    ],
)
def test_the_hash_command_reads_the_password_from_stdin(command: list[str]) -> None:
    made = subprocess.run(
        command,
        input="s3nha forte\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
        timeout=30,
    )
    name, _, hashed = made.stdout.strip().partition(":")
    assert name == "alice"
    assert PasswordHash.parse(hashed).matches("s3nha forte")


def test_a_name_the_setting_would_refuse_gets_no_hash() -> None:
    """``bad:name:HASH`` would be refused by PIXRECON_DASHBOARD_USERS: better said before
    anyone types a password for it."""
    made = subprocess.run(
        [sys.executable, "-m", "pixrecon", "dashboard", "hash-password", "bad:name"],
        input="s3nha forte\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=30,
    )
    assert made.returncode == 2
    assert made.stdout == ""
    assert "cannot be a user's name" in made.stderr
    with pytest.raises(ValueError, match="pixrecon dashboard hash-password"):
        Settings(_env_file=None, dashboard_users="bad name:scrypt")
