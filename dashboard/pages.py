"""The dashboard's routes. Reading pages are plain functions (Starlette runs them in its
thread pool, off the receiver's event loop); posts read their form, check its CSRF token,
then do their work in the thread pool too."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Sequence
from datetime import date
from typing import Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from dashboard import views
from dashboard.passwords import authenticate
from dashboard.queries import SORTS, STATE_FILTERS, CaseQuery
from dashboard.web import Dashboard, base, check_csrf, read_form, safe_next, to_login
from reconcile.cases import APPLIES_TO, CaseChanged, CaseNotFound, NoteRequired, set_state
from reconcile.db import session_scope
from reconcile.exports.exceptions import exception_table
from reconcile.exports.files import Format, Kind, choice_problem, encoded, open_export
from reconcile.exports.ofx import OfxAccount
from reconcile.exports.table import ExportError, NotReconciled
from reconcile.exports.tabular import inert
from reconcile.models import CaseState
from reconcile.nightly import EXCEPTION_FIELDS
from reconcile.settings import get_settings

Page = Callable[[Request], Response]
RECENT_DAYS = (7, 14, 30, 60)
REMAINING = STATE_FILTERS["remaining"]


# Ids are the database's 64-bit integers, and an offset must be one too: a larger number
# in a URL is a case or page that cannot exist, not a reason for a 500.
LARGEST_ID = 2**63 - 1
LAST_PAGE = 10**9


def _case_id(request: Request) -> int:
    case_id: int = request.path_params["case_id"]
    if case_id > LARGEST_ID:
        raise HTTPException(404, f"There is no exception case {case_id}.")
    return case_id


def _ofx_account() -> OfxAccount:
    """The account an OFX statement names: the same as ``pixrecon export`` names."""
    return OfxAccount.from_settings(get_settings().accounts_account_id)


# Pix began in 2020; a page reaching days around these bounds (a day before, two weeks
# after) must stay within what a date can hold.
FIRST_DAY, LAST_DAY = date(2000, 1, 1), date(2099, 12, 31)


def _day(text: str | None, fallback: Callable[[], date]) -> date:
    if not text:
        return fallback()
    try:
        day = date.fromisoformat(text)
    except ValueError:
        raise HTTPException(400, f"Not a date: {text[:20]!r} (expected YYYY-MM-DD).") from None
    if not FIRST_DAY <= day <= LAST_DAY:
        raise HTTPException(
            400, f"{text} is out of range: days from {FIRST_DAY.year} to {LAST_DAY.year}."
        )
    return day


# What a verdict is about (docs/design.md §5): anything else in the address is a typo.
SUBJECTS = ("movement", "charge", "payout", "infraction", "statement", "recurrence")


def _choice(value: str | None, choices: Sequence[object], default: str, name: str) -> str:
    """A filter a person mistyped must not quietly show another list."""
    if value is None or value == "":
        return default
    if value not in [str(choice) for choice in choices]:
        offered = ", ".join(str(choice) for choice in choices)
        raise HTTPException(400, f"Not a {name}: {value[:20]!r} (one of {offered}).")
    return value


def _page(value: str | None) -> int:
    try:
        page = int(value) if value else 1
    except ValueError:
        page = 0
    if page < 1:
        raise HTTPException(400, f"Not a page number: {(value or '')[:20]!r}.")
    # Bounded: the offset it makes must fit the database's integers.
    return min(page, LAST_PAGE)


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
        # Looked up now, off the event loop, for the page rendered on a failure.
        await run_in_threadpool(dash.signed_in, request)
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
        await run_in_threadpool(dash.sign_out, request)
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
        page = _page(params.get("page"))
        query = CaseQuery(
            state=_choice(params.get("state"), list(STATE_FILTERS), "remaining", "state"),
            subject=_choice(params.get("subject"), SUBJECTS, "", "subject") or None,
            status=params.get("status") or None,
            day=_day(day_text, date.today) if day_text else None,
            sort=_choice(params.get("sort"), SORTS, "priority", "sort order"),
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
            request,
            "exceptions.html",
            {"nav": "exceptions", "link": link, "largest_page": LAST_PAGE, **context},
        )

    def case_page(request: Request, _user: str) -> Response:
        case_id = _case_id(request)
        with session_scope(dash.engine) as session:
            context = views.case_page(session, case_id)
        if context is None:
            raise HTTPException(404, f"There is no exception case {case_id}.")
        error = request.query_params.get("error")
        return dash.render(request, "case.html", {"nav": "exceptions", "error": error, **context})

    def export_download(request: Request, _user: str) -> Response:
        """``/export?date=D&kind=K&format=F[&excel=1]``: what ``pixrecon export`` writes
        (docs/exports.md), streamed as it is read."""
        params = request.query_params
        day = _day(params.get("date"), default_day)
        try:
            kind = Kind(params.get("kind", Kind.exceptions.value))
            fmt = Format(params.get("format", Format.csv.value))
        except ValueError:
            raise HTTPException(
                400, "kind is exceptions, movements or statement; format is csv, jsonl or ofx."
            ) from None
        excel = params.get("excel", "") in ("1", "true", "yes", "on")
        problem = choice_problem(kind, fmt, excel=excel)
        if problem is not None:
            raise HTTPException(400, problem[:1].upper() + problem[1:] + ".")
        try:
            made = open_export(dash.engine, day, kind, fmt, excel=excel, account=_ofx_account())
        except ExportError as exc:
            raise HTTPException(404, str(exc)) from None
        if kind is Kind.statement and made.notice is not None:
            # The command line writes such a file with a warning beside it; a download has
            # nowhere to put one, and an empty statement imported reads as a quiet day.
            raise HTTPException(404, made.notice[:1].upper() + made.notice[1:] + ".")
        return StreamingResponse(
            encoded(made.chunks),
            media_type=made.media_type,
            headers={"Content-Disposition": f'attachment; filename="{made.filename}"'},
        )

    def exceptions_csv(request: Request, _user: str) -> Response:
        """The former download, kept for the links people saved: the day's remaining
        exceptions in the columns of ``EXCEPTION_FIELDS``, amounts in centavos. Read by
        ``reconcile.exports`` like ``/export`` (current states, personal data masked)."""
        day = _day(request.query_params.get("date"), default_day)
        try:
            rows: Iterable[dict[str, Any]] = exception_table(dash.engine, day).rows
        except NotReconciled as exc:
            # An empty file would read as "no exceptions" to whoever opens it.
            raise HTTPException(404, str(exc)) from None
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=EXCEPTION_FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(
            {column: inert(column, value) for column, value in row.items()}
            for row in rows
            if row["state"] in REMAINING
        )
        return Response(
            out.getvalue().encode("utf-8"),
            media_type="text/csv; charset=utf-8",
            headers={
                "Content-Disposition": f'attachment; filename="exceptions-{day.isoformat()}.csv"'
            },
        )

    def recent_page(request: Request, _user: str) -> Response:
        params = request.query_params
        days = int(_choice(params.get("days"), RECENT_DAYS, "14", "number of days"))
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
            user = await run_in_threadpool(dash.signed_in, request)
            if user is None:
                raise HTTPException(401, "Sign in first.")
            form = await read_form(request)
            check_csrf(request, form)
            case_id = _case_id(request)
            note = form.get("note", "")
            page = f"{base(request)}/exceptions/{case_id}"
            # Act only on the state the person saw (the page sends it): a case someone
            # else resolved meanwhile is not acknowledged or resolved again by a stale tab.
            seen = form.get("seen")
            expect = [s for s in APPLIES_TO[state] if seen is None or s == seen]

            def act() -> str | None:
                try:
                    with session_scope(dash.engine) as session:
                        set_state(
                            session, case_id, state, note, actor=f"dashboard:{user}", expect=expect
                        )
                except NoteRequired:
                    return "note"
                except CaseChanged:
                    return "changed"
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
        Route("/export", signed(export_download)),
        Route("/exceptions.csv", signed(exceptions_csv)),
        Route("/exceptions/{case_id:int}", signed(case_page)),
        Route(
            "/exceptions/{case_id:int}/acknowledge",
            acting(CaseState.ACKNOWLEDGED),
            methods=["POST"],
        ),
        Route("/exceptions/{case_id:int}/resolve", acting(CaseState.RESOLVED), methods=["POST"]),
        Route("/exceptions/{case_id:int}/reopen", acting(CaseState.OPEN), methods=["POST"]),
        Route("/recent", signed(recent_page)),
    ]
