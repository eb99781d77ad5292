"""The baseline: a bare one-route Starlette JSON app under uvicorn's defaults (its access log on,
its fastest HTTP parser and event loop where installed). Usage: python bench/_bare_server.py PORT"""

from __future__ import annotations

import sys

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


async def hello(_: Request) -> Response:
    return JSONResponse({"ok": True, "data": {"hello": "world"}})


app = Starlette(routes=[Route("/bare", hello)])

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]))
