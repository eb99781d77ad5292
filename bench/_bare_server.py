"""The baseline: a bare one-route Starlette JSON app under uvicorn's defaults (its access log on,
its fastest HTTP parser and event loop where installed).

Usage: python bench/_bare_server.py PORT [PATH BODY_FILE] [--no-access-log]
With PATH and BODY_FILE, the route answers that JSON document (encoded per request, as a route
written by hand does), so that it serves as many bytes as the server it is compared with."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


def bare_app(path: str, payload: Any) -> Starlette:
    async def answer(_: Request) -> Response:
        return JSONResponse(payload)

    return Starlette(routes=[Route(path, answer)])


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if a != "--no-access-log"]
    path, payload = "/bare", {"ok": True, "data": {"hello": "world"}}
    if len(arguments) == 3:
        path, payload = arguments[1], json.loads(Path(arguments[2]).read_text())
    access_log = "--no-access-log" not in sys.argv
    uvicorn.run(
        bare_app(path, payload), host="127.0.0.1", port=int(arguments[0]), access_log=access_log
    )
