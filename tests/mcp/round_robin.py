"""A tiny round-robin HTTP proxy for the scale-out test: each request goes to the next upstream.

Run: python -m tests.mcp.round_robin PORT UPSTREAM_URL [UPSTREAM_URL ...]. Like nginx or Caddy
with their defaults, it balances requests, not connections, and keeps no affinity, so one client's
requests alternate between the upstreams. `GET /_proxy/counts` answers how many requests each
upstream has been sent.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import AsyncIterator

import httpx
import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "upgrade", "host"}


class RoundRobin:
    def __init__(self, upstreams: list[str]) -> None:
        self.upstreams = upstreams
        self.turn = itertools.cycle(range(len(upstreams)))
        self.counts = [0] * len(upstreams)
        self.http = httpx.AsyncClient(timeout=30)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        if request.url.path == "/_proxy/counts":
            await JSONResponse(self.counts)(scope, receive, send)
            return
        index = next(self.turn)
        self.counts[index] += 1
        url = self.upstreams[index] + request.url.path
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP]
        upstream = await self.http.send(
            self.http.build_request(
                request.method, url, headers=headers, content=await request.body()
            ),
            stream=True,
        )

        async def body() -> AsyncIterator[bytes]:
            try:
                async for chunk in upstream.aiter_raw():
                    yield chunk
            finally:
                await upstream.aclose()

        response: Response = StreamingResponse(
            body(),
            status_code=upstream.status_code,
            headers={k: v for k, v in upstream.headers.items() if k.lower() not in HOP_BY_HOP},
        )
        await response(scope, receive, send)


if __name__ == "__main__":
    port, *upstreams = sys.argv[1:]
    uvicorn.run(RoundRobin(upstreams), host="127.0.0.1", port=int(port), log_level="warning")
