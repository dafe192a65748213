"""The dashboard's routes. Reading pages are plain functions (Starlette runs them in its
thread pool, off the receiver's event loop); posts read their form, check its CSRF token,
then do their work in the thread pool too."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from datetime import date
from typing import Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from dashboard import views
from dashboard.passwords import authenticate
from dashboard.queries import (
    SORTS,
    STATE_FILTERS,
    CaseQuery,
    latest_run,
    remaining_case_states,
)
from dashboard.web import Dashboard, base, check_csrf, read_form, safe_next, to_login
from reconcile.cases import CaseNotFound, NoteRequired, set_state
from reconcile.db import session_scope
from reconcile.masking import mask_text
from reconcile.models import CaseState
from reconcile.nightly import EXCEPTION_FIELDS

Page = Callable[[Request], Response]
RECENT_DAYS = (7, 14, 30, 60)


def _day(text: str | None, fallback: Callable[[], date]) -> date:
    if not text:
        return fallback()
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise HTTPException(400, f"Not a date: {text[:20]!r} (expected YYYY-MM-DD).") from None


def _choice(value: str | None, choices: tuple[str, ...] | list[str], default: str) -> str:
    return value if value is not None and value in choices else default


def routes(dash: Dashboard) -> list[BaseRoute]:
    def signed(page: Callable[[Request, str], Response]) -> Page:
        def endpoint(request: Request) -> Response:
            user = dash.signed_in(request)
            if user is None:
                return to_login(request)
            return page(request, user)

        return endpoint

    def default_day() -> date:
        with session_scope(dash.engine) as session:
            return views.default_day(session)

    # --- signing in and out ------------------------------------------------------------

    def login_form(request: Request) -> Response:
        if dash.signed_in(request) is not None:
            return RedirectResponse(safe_next(request, request.query_params.get("next")), 303)
        return dash.render(request, "login.html", {"next": request.query_params.get("next", "")})

    async def login(request: Request) -> Response:
        form = await read_form(request)
        check_csrf(request, form)
        name, password = form.get("name", "").strip(), form.get("password", "")
        context = {"next": form.get("next", ""), "name": name}
        if dash.throttle.blocked(name):
            context["error"] = "Too many failed attempts for this name: wait a few minutes."
            return dash.render(request, "login.html", context, status_code=429)
        if not await run_in_threadpool(authenticate, dash.users, name, password):
            dash.throttle.failed(name)
            context["error"] = "Wrong name or password."
            return dash.render(request, "login.html", context, status_code=401)
        dash.throttle.succeeded(name)
        dash.sign_in(request, name)
        return RedirectResponse(safe_next(request, form.get("next")), 303)

    async def logout(request: Request) -> Response:
        form = await read_form(request)
        check_csrf(request, form)
        request.session.clear()
        return RedirectResponse(f"{base(request)}/login", 303)

    # --- reading -------------------------------------------------------------------------

    def day_page(request: Request, _user: str) -> Response:
        day = _day(request.query_params.get("date"), default_day)
        with session_scope(dash.engine) as session:
            context = views.day_page(session, dash.reports, day)
        return dash.render(request, "day.html", {"nav": "day", **context})

    def exceptions_page(request: Request, _user: str) -> Response:
        params = request.query_params
        day_text = params.get("date")
        try:
            page = max(1, int(params.get("page", "1")))
        except ValueError:
            page = 1
        query = CaseQuery(
            state=_choice(params.get("state"), list(STATE_FILTERS), "remaining"),
            subject=params.get("subject") or None,
            status=params.get("status") or None,
            day=_day(day_text, date.today) if day_text else None,
            sort=_choice(params.get("sort"), SORTS, "priority"),
            page=page,
        )
        with session_scope(dash.engine) as session:
            context = views.exceptions_page(session, query, dash.page_size)
        here = f"{base(request)}/exceptions"

        def link(**changes: object) -> str:
            values: dict[str, object] = {
                "state": query.state,
                "subject": query.subject,
                "status": query.status,
                "date": query.day.isoformat() if query.day else None,
                "sort": query.sort,
                "page": 1 if "sort" in changes else query.page,
            }
            values.update(changes)
            return f"{here}?{urlencode({k: v for k, v in values.items() if v})}"

        return dash.render(
            request, "exceptions.html", {"nav": "exceptions", "link": link, **context}
        )

    def case_page(request: Request, _user: str) -> Response:
        case_id: int = request.path_params["case_id"]
        with session_scope(dash.engine) as session:
            context = views.case_page(session, dash.reports, case_id)
        if context is None:
            raise HTTPException(404, f"There is no exception case {case_id}.")
        error = request.query_params.get("error")
        return dash.render(request, "case.html", {"nav": "exceptions", "error": error, **context})

    def exceptions_csv(request: Request, _user: str) -> Response:
        """The day's open exceptions as the nightly report lists them (the columns of
        ``pixrecon reconcile --export csv``), less those people resolved since the run."""
        day = _day(request.query_params.get("date"), default_day)
        with session_scope(dash.engine) as session:
            run = latest_run(session, day)
            report = dash.reports.get(session, run.id) if run is not None else {}
            live = remaining_case_states(session, day)
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=EXCEPTION_FIELDS, extrasaction="ignore")
        writer.writeheader()
        for entry in report.get("exceptions", []):
            state = live.get(entry.get("case_id", 0))
            if state is None:
                continue
            row = {**entry, "state": state}
            for text_field in ("reason", "action"):
                if isinstance(row.get(text_field), str):
                    row[text_field] = mask_text(row[text_field])
            writer.writerow(row)
        return Response(
            out.getvalue().encode("utf-8"),
            media_type="text/csv; charset=utf-8",
            headers={
                "Content-Disposition": f'attachment; filename="exceptions-{day.isoformat()}.csv"'
            },
        )

    def recent_page(request: Request, _user: str) -> Response:
        params = request.query_params
        try:
            days = int(params.get("days", "14"))
        except ValueError:
            days = 14
        days = days if days in RECENT_DAYS else 14
        last = _day(params.get("until"), default_day)
        hours_of = _day(params.get("hours"), lambda: last)
        with session_scope(dash.engine) as session:
            context = views.recent_page(session, dash.reports, last, days, hours_of)
        return dash.render(
            request, "recent.html", {"nav": "recent", "choices": RECENT_DAYS, **context}
        )

    # --- the only writes: acknowledge and resolve -------------------------------------

    def acting(state: CaseState) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            user = dash.signed_in(request)
            if user is None:
                raise HTTPException(401, "Sign in first.")
            form = await read_form(request)
            check_csrf(request, form)
            case_id: int = request.path_params["case_id"]
            note = form.get("note", "")
            page = f"{base(request)}/exceptions/{case_id}"

            def act() -> str | None:
                try:
                    with session_scope(dash.engine) as session:
                        set_state(session, case_id, state, note, actor=f"dashboard:{user}")
                except NoteRequired:
                    return "note"
                except ValueError:
                    return "long"
                return None

            try:
                error = await run_in_threadpool(act)
            except CaseNotFound:
                raise HTTPException(404, f"There is no exception case {case_id}.") from None
            return RedirectResponse(f"{page}?error={error}" if error else page, 303)

        return endpoint

    return [
        Route("/", signed(day_page), name="day"),
        Route("/login", login_form, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/exceptions", signed(exceptions_page)),
        Route("/exceptions.csv", signed(exceptions_csv)),
        Route("/exceptions/{case_id:int}", signed(case_page)),
        Route(
            "/exceptions/{case_id:int}/acknowledge",
            acting(CaseState.ACKNOWLEDGED),
            methods=["POST"],
        ),
        Route("/exceptions/{case_id:int}/resolve", acting(CaseState.RESOLVED), methods=["POST"]),
        Route("/recent", signed(recent_page)),
    ]
