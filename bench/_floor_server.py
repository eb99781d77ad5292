"""The floor: what a gateway in Python cannot beat. One Starlette route on uvicorn's fast stack
(httptools, uvloop, no access log) that reads the JSON-RPC request, makes the same GET as
`portal_whoami` with a pooled httpx client and wraps the answer as an MCP tool result: no SDK,
no checks, no log.

Usage: python bench/_floor_server.py PORT (reads PORTAL_API_BASE and PORTAL_SESSION_TOKEN)
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

http = httpx.AsyncClient(
    base_url=os.environ["PORTAL_API_BASE"],
    headers={"Authorization": f"Bearer {os.environ['PORTAL_SESSION_TOKEN']}"},
)


async def call(request: Request) -> Response:
    message = await request.json()
    answer = (await http.get("/api/whoami")).json()
    result = {
        "content": [{"type": "text", "text": json.dumps(answer)}],
        "structuredContent": answer,
        "isError": False,
    }
    return JSONResponse({"jsonrpc": "2.0", "id": message.get("id"), "result": result})


@contextlib.asynccontextmanager
async def lifespan(_: Starlette) -> AsyncIterator[None]:
    yield
    await http.aclose()


if __name__ == "__main__":
    app = Starlette(routes=[Route("/mcp", call, methods=["POST"])], lifespan=lifespan)
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=int(sys.argv[1]),
        http="httptools",
        loop="uvloop",
        access_log=False,
        log_level="warning",
    )
