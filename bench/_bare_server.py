"""The baseline: a bare Starlette JSON route under the same uvicorn settings as the stubs."""

from __future__ import annotations

import sys

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from server_stub.serve import serve


async def hello(_: Request) -> Response:
    return JSONResponse({"ok": True, "data": {"hello": "world"}})


app = Starlette(routes=[Route("/bare", hello)])

if __name__ == "__main__":
    # Exactly `svc-stub portal`'s settings, access log included.
    serve(app, "127.0.0.1", int(sys.argv[1]))
