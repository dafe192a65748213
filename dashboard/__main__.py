"""``python -m dashboard hash-password``: a hash for ``PIXRECON_DASHBOARD_USERS``.

The password is read without echo (twice), or from standard input when it is not a
terminal, so that it never appears in the shell's history or the process list."""

from __future__ import annotations

import getpass
import sys

from dashboard.passwords import hash_password
from reconcile.settings import DASHBOARD_USER_NAME

USAGE = "usage: python -m dashboard hash-password [NAME]"


class Refused(Exception):
    """What was given cannot make a line for the setting; the message says why."""


def hash_line(name: str | None) -> str:
    """``NAME:HASH`` (or the hash alone), the password read as the module says."""
    if name is not None and not DASHBOARD_USER_NAME.fullmatch(name):
        # Printed, NAME:HASH would be refused by the setting it is meant for.
        raise Refused(f"{name!r} cannot be a user's name: letters, digits and . _ @ - only")
    if sys.stdin.isatty():
        password = getpass.getpass("password: ")
        if getpass.getpass("again: ") != password:
            raise Refused("the two passwords differ")
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        raise Refused("an empty password is not a password")
    hashed = hash_password(password)
    return f"{name}:{hashed}" if name is not None else hashed


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "hash-password" or len(argv) > 2:
        print(USAGE, file=sys.stderr)
        return 2
    try:
        print(hash_line(argv[1] if len(argv) == 2 else None))
    except Refused as exc:
        print(exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
