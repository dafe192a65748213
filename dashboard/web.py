"""What every page shares: who is signed in, the CSRF token of the session, reading a
posted form, and rendering a template in Brazilian conventions."""

from __future__ import annotations

import hmac
import json
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote

from jinja2 import Undefined
from sqlalchemy import Engine, select
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.templating import Jinja2Templates

from dashboard.passwords import PasswordHash, fingerprint
from dashboard.queries import Reports
from reconcile.db import read_scope, session_scope
from reconcile.formats import br_date, brl, duration, sp_time
from reconcile.masking import mask_text
from reconcile.models import OperatorAction

HERE = Path(__file__).parent
FORM_MAX_BYTES = 16 * 1024
SESSION_USER, SESSION_PRINT, SESSION_CSRF, SESSION_ID = "user", "print", "csrf", "sid"
# A signed cookie stays valid until it expires whatever the browser does with it: signing
# out records the session's id (``operator_action``, shared by every process), and a
# cookie whose session was signed out is refused from then on.
SIGN_OUT = "sign_out"
_UNKNOWN: Any = object()


def _count(value: int | None) -> str:
    return "—" if value is None else f"{value:,}".replace(",", ".")


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%".replace(".", ",")


def _known(render: Callable[[Any], str]) -> Callable[[Any], str]:
    """Reports written by older versions lack newer figures: shown as unknown (``—``)."""

    def show(value: Any) -> str:
        return render(None if isinstance(value, Undefined) else value)

    return show


def _mask(value: Any) -> str:
    return "" if value is None or isinstance(value, Undefined) else mask_text(str(value))


def make_templates() -> Jinja2Templates:
    templates = Jinja2Templates(directory=HERE / "templates")
    templates.env.filters.update(
        brl=_known(brl),
        br_date=_known(br_date),
        sp_time=_known(sp_time),
        duration=_known(duration),
        count=_known(_count),
        percent=_known(_percent),
        mask=_mask,
    )
    return templates


class LoginThrottle:
    """At most ``limit`` failed sign-ins per name in ``window`` seconds, per process: with
    the cost of scrypt, enough to make guessing a password over HTTP hopeless."""

    def __init__(self, limit: int = 10, window: float = 900.0) -> None:
        self.limit, self.window = limit, window
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, name: str, now: float) -> deque[float]:
        failures = self._failures.setdefault(name, deque())
        while failures and failures[0] < now - self.window:
            failures.popleft()
        return failures

    def blocked(self, name: str) -> bool:
        with self._lock:
            return len(self._recent(name, time.monotonic())) >= self.limit

    def failed(self, name: str) -> None:
        with self._lock:
            now = time.monotonic()
            self._recent(name, now).append(now)
            if len(self._failures) > 10_000:
                # Names nobody has; keep memory bounded whatever a guesser sends.
                self._failures = {k: v for k, v in self._failures.items() if v}

    def succeeded(self, name: str) -> None:
        with self._lock:
            self._failures.pop(name, None)


@dataclass
class Dashboard:
    engine: Engine
    users: dict[str, PasswordHash]
    templates: Jinja2Templates
    page_size: int = 50
    reports: Reports = field(default_factory=Reports)
    throttle: LoginThrottle = field(default_factory=LoginThrottle)

    def signed_in(self, request: Request) -> str | None:
        """The session's user, while that user is still configured with the same hash and
        the session has not been signed out. Looked up once per request (it reads the
        database: async endpoints call it in the thread pool first)."""
        known = getattr(request.state, "dashboard_user", _UNKNOWN)
        if known is _UNKNOWN:
            known = self._session_user(request)
            request.state.dashboard_user = known
        return known  # type: ignore[no-any-return]

    def _session_user(self, request: Request) -> str | None:
        name = request.session.get(SESSION_USER)
        if not isinstance(name, str):
            return None
        hashed = self.users.get(name)
        if hashed is None or request.session.get(SESSION_PRINT) != fingerprint(hashed):
            return None
        session_id = request.session.get(SESSION_ID)
        if not isinstance(session_id, str) or self._signed_out(session_id):
            return None
        return name

    def _signed_out(self, session_id: str) -> bool:
        # A read on every page: on SQLite it must not queue for the write lock.
        with read_scope(self.engine) as session:
            found = session.execute(
                select(OperatorAction.id)  # type: ignore[call-overload]
                .where(
                    OperatorAction.action == SIGN_OUT,
                    OperatorAction.selection == _selection(session_id),
                )
                .limit(1)
            ).first()
        return found is not None

    def sign_in(self, request: Request, name: str) -> None:
        # A new session on sign-in: whatever a visitor's cookie held before is dropped.
        request.session.clear()
        request.session[SESSION_USER] = name
        request.session[SESSION_PRINT] = fingerprint(self.users[name])
        request.session[SESSION_CSRF] = secrets.token_urlsafe(32)
        request.session[SESSION_ID] = secrets.token_urlsafe(18)
        request.state.dashboard_user = name

    def sign_out(self, request: Request) -> None:
        """Ends the session for good, also for a copy of its cookie (blocking: call it in
        the thread pool)."""
        name, session_id = request.session.get(SESSION_USER), request.session.get(SESSION_ID)
        if isinstance(name, str) and isinstance(session_id, str):
            with session_scope(self.engine) as session:
                session.add(
                    OperatorAction(
                        action=SIGN_OUT,
                        actor=f"dashboard:{name}"[:100],
                        selection=_selection(session_id),
                    )
                )
        request.session.clear()
        request.state.dashboard_user = None

    def render(
        self, request: Request, name: str, context: dict[str, Any], status_code: int = 200
    ) -> Response:
        values = {
            "base": base(request),
            "user": self.signed_in(request),
            "csrf": csrf_token(request),
            **context,
        }
        return self.templates.TemplateResponse(request, name, values, status_code=status_code)


def _selection(session_id: str) -> str:
    return json.dumps({"session": session_id})


def base(request: Request) -> str:
    """Where the dashboard is mounted (``/dashboard``, or under a proxy's prefix)."""
    return str(request.scope.get("root_path", ""))


def csrf_token(request: Request) -> str:
    token = request.session.get(SESSION_CSRF)
    if not isinstance(token, str):
        token = secrets.token_urlsafe(32)
        request.session[SESSION_CSRF] = token
    return token


def check_csrf(request: Request, form: dict[str, str]) -> None:
    """Every POST carries the session's token: another site can make a signed-in browser
    post, but cannot read the token to put in the form."""
    expected = request.session.get(SESSION_CSRF)
    sent = form.get("csrf", "")
    if not isinstance(expected, str) or not hmac.compare_digest(sent, expected):
        raise HTTPException(403, "This form is stale or did not come from the dashboard.")


async def read_form(request: Request) -> dict[str, str]:
    """A urlencoded form of bounded size (the only kind the pages post)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        # Read as an empty form: without its token a post is refused (403) like any forgery.
        return {}
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > FORM_MAX_BYTES:
            raise HTTPException(413, "The form is too large.")
    try:
        pairs = parse_qsl(
            body.decode("utf-8"), keep_blank_values=True, strict_parsing=False, max_num_fields=20
        )
    except (UnicodeDecodeError, ValueError):
        raise HTTPException(400, "The form could not be read.") from None
    return dict(pairs)


def to_login(request: Request) -> RedirectResponse:
    wanted = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"{base(request)}/login?next={quote(wanted, safe='')}", 303)


def safe_next(request: Request, wanted: str | None) -> str:
    """Back to the page that asked for a sign-in — only ever a page of the dashboard."""
    home = f"{base(request)}/"
    if wanted and wanted.startswith(home) and not wanted.startswith("//") and "\\" not in wanted:
        return wanted
    return home
