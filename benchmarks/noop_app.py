"""The ceiling of docs/design.md §7's ingest ratio: a Starlette endpoint that reads the body and
answers as the receiver does, storing nothing. Served by uvicorn with the same options as
``pixrecon serve``."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


async def noop(request: Request) -> JSONResponse:
    await request.body()
    return JSONResponse({"items": 1, "new": 1, "duplicates": 0})


app = Starlette(routes=[Route("/webhooks/qrcode/pix", noop, methods=["POST"])])
