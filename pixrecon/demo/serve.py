"""``pixrecon demo --serve``: after the day, the receiver and the dashboard stay up for a
person with a browser, until Ctrl-C (or SIGTERM)."""

from __future__ import annotations

import secrets

from rich.console import Console
from rich.markup import escape

from dashboard.passwords import hash_password
from pixrecon.demo.day import Login
from sandbox.cli import wait_for_interrupt

__all__ = ["make_login", "print_invitation", "wait_for_interrupt"]


def make_login() -> Login:
    """A user for this run only: the password is random, shown once, never stored."""
    password = secrets.token_urlsafe(12)
    return Login("demo", password, hash_password(password))


def print_invitation(console: Console, url: str, login: Login, day: str) -> None:
    console.rule("the day in a browser")
    console.print(f"dashboard  {escape(url)}/dashboard/?date={day}")
    console.print(f"user       {login.name}")
    console.print(f"password   {escape(login.password)}")
    console.print(
        f"webhooks   {escape(url)}/webhooks/… (the sandbox's secret; "
        "metrics at /metrics, health at /healthz)"
    )
    console.print("Ctrl-C stops the receiver, its workers and the sandbox.")
