"""``python -m dashboard hash-password``: a hash for ``PIXRECON_DASHBOARD_USERS``.

The password is read without echo (twice), or from standard input when it is not a
terminal, so that it never appears in the shell's history or the process list."""

from __future__ import annotations

import getpass
import sys

from dashboard.passwords import hash_password
from reconcile.settings import DASHBOARD_USER_NAME

USAGE = "usage: python -m dashboard hash-password [NAME]"


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "hash-password" or len(argv) > 2:
        print(USAGE, file=sys.stderr)
        return 2
    if len(argv) == 2 and not DASHBOARD_USER_NAME.fullmatch(argv[1]):
        # Printed, NAME:HASH would be refused by the setting it is meant for.
        print(
            f"{argv[1]!r} cannot be a user's name: letters, digits and . _ @ - only",
            file=sys.stderr,
        )
        return 2
    if sys.stdin.isatty():
        password = getpass.getpass("password: ")
        if getpass.getpass("again: ") != password:
            print("the two passwords differ", file=sys.stderr)
            return 2
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        print("an empty password is not a password", file=sys.stderr)
        return 2
    hashed = hash_password(password)
    print(f"{argv[1]}:{hashed}" if len(argv) == 2 else hashed)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
