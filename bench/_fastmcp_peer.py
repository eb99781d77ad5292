"""The FastMCP peer: the same `portal_whoami` tool written with the `fastmcp` package as its docs
show (a decorated async function, a pooled httpx client), served over stdio or streamable HTTP.

It runs in a throwaway virtual environment that bench/_peer_env.py makes (fastmcp is no
dependency of svc-mcp). Usage: python bench/_fastmcp_peer.py stdio | http PORT
Reads PORTAL_API_BASE and PORTAL_SESSION_TOKEN, as svc-mcp does.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import httpx
from fastmcp import FastMCP

mcp = FastMCP("peer")
http = httpx.AsyncClient(
    base_url=os.environ.get("PORTAL_API_BASE", "http://127.0.0.1:9"),
    headers={"Authorization": f"Bearer {os.environ.get('PORTAL_SESSION_TOKEN', '')}"},
)


@mcp.tool
async def portal_whoami() -> dict[str, Any]:
    """Get the identity ({id, kind, role}) the portal proves for the session token."""
    response = await http.get("/api/whoami")
    response.raise_for_status()
    answer: dict[str, Any] = response.json()
    return answer


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        mcp.run(show_banner=False)
    else:
        mcp.run(
            transport="http",
            host="127.0.0.1",
            port=int(sys.argv[2]),
            show_banner=False,
            log_level="warning",
            stateless_http=True,
            json_response=True,
        )
