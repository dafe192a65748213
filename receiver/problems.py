"""RFC 7807 problem+json errors, the only error format the receiver speaks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

PROBLEM_BASE = "https://pixrecon.dev/problems/"

TITLES = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Payload Too Large",
    415: "Unsupported Media Type",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


class Problem(Exception):
    def __init__(
        self,
        status: int,
        slug: str,
        detail: str,
        *,
        violations: list[dict[str, str]] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.slug = slug
        self.detail = detail
        self.violations = violations
        self.headers = dict(headers or {})

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "type": PROBLEM_BASE + self.slug,
            "title": TITLES.get(self.status, "Error"),
            "status": self.status,
            "detail": self.detail,
        }
        if self.violations is not None:
            body["violations"] = self.violations
        return body


class ProblemResponse(JSONResponse):
    media_type = "application/problem+json"


def problem_response(problem: Problem, request_id: str | None = None) -> Response:
    body = problem.to_dict()
    if request_id:
        body["request_id"] = request_id
    return ProblemResponse(body, status_code=problem.status, headers=problem.headers)


async def handle_problem(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Problem)
    return problem_response(exc, getattr(request.state, "request_id", None))


def storage_unavailable() -> Problem:
    return Problem(
        503,
        "storage-unavailable",
        "the delivery could not be stored; nothing was accepted, retry later",
        headers={"Retry-After": "30"},
    )


def storage_stalled(reason: str) -> Problem:
    return Problem(
        503,
        "storage-unavailable",
        f"the database did not answer ({reason}); the delivery is not acknowledged, retry "
        "later (if it was stored after all, the retry is counted as a duplicate)",
        headers={"Retry-After": "30"},
    )


def overloaded(reason: str) -> Problem:
    return Problem(
        503,
        "overloaded",
        f"the receiver is overloaded ({reason}); nothing was stored, retry later",
        headers={"Retry-After": "5"},
    )


def unexpected() -> Problem:
    """A fault of the receiver's own, answered like any other error: a provider that
    gets a 5xx retries, so saying so costs nothing, and a bare text/plain page says
    nothing at all."""
    return Problem(
        500,
        "unexpected-error",
        "the receiver failed unexpectedly; the delivery is not acknowledged, retry later "
        "(the receiver's log names this request id)",
    )
