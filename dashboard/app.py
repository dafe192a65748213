"""The dashboard application, mounted at ``/dashboard`` by ``pixrecon/node.py``: its own
session middleware (so webhook deliveries never pay for cookies), security headers, and
HTML error pages."""

from __future__ import annotations

import structlog
from sqlalchemy import Engine
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dashboard import pages
from dashboard.passwords import HashFormatError, PasswordHash, parse_users
from dashboard.web import HERE, Dashboard, base, make_templates
from reconcile.settings import Settings

COOKIE = "pixrecon_dashboard"
HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        b"frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    # Pages show money and personal data (masked): never kept in a shared cache.
    (b"cache-control", b"no-store"),
]

log = structlog.get_logger(__name__)


class SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"].extend(HEADERS)
            await send(message)

        await self.app(scope, receive, send_with_headers)


def create_dashboard(settings: Settings, engine: Engine) -> Starlette:
    templates = make_templates()
    problem: str | None = None
    users: dict[str, PasswordHash] = {}
    if not settings.dashboard_users:
        problem = "PIXRECON_DASHBOARD_USERS is not set: nobody may sign in."
    elif settings.dashboard_secret is None:
        problem = "PIXRECON_DASHBOARD_SECRET is not set: sessions cannot be signed."
    else:
        try:
            users = parse_users(settings.dashboard_users)
        except HashFormatError as exc:
            problem = f"PIXRECON_DASHBOARD_USERS: {exc}."
    if problem is not None or settings.dashboard_secret is None:
        log.info("dashboard_not_configured", reason=problem)
        return _not_configured(templates, problem or "")

    async def error_page(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        context = {"base": base(request), "status": exc.status_code, "detail": exc.detail}
        return templates.TemplateResponse(
            request, "error.html", context, status_code=exc.status_code, headers=exc.headers
        )

    dash = Dashboard(engine=engine, users=users, templates=templates)
    return Starlette(
        routes=[
            *pages.routes(dash),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ],
        middleware=[
            Middleware(SecurityHeaders),
            Middleware(
                SessionMiddleware,
                secret_key=settings.dashboard_secret.get_secret_value(),
                session_cookie=COOKIE,
                max_age=settings.dashboard_session_seconds,
                path="/dashboard",
                same_site="lax",
                https_only=settings.dashboard_cookie_secure,
            ),
        ],
        exception_handlers={HTTPException: error_page},
    )


def _not_configured(templates: Jinja2Templates, problem: str) -> Starlette:
    """Without users and a secret there is no dashboard: every path answers 404, with a
    page that says what to set (and nothing about the data)."""

    def page(request: Request) -> Response:
        context = {"base": base(request), "problem": problem}
        return templates.TemplateResponse(request, "not_configured.html", context, status_code=404)

    return Starlette(
        routes=[Route("/{path:path}", page, methods=["GET", "HEAD", "POST"])],
        middleware=[Middleware(SecurityHeaders)],
    )
