"""Accepted intel envelopes per second: through `svc-mcp submit_intel` over one stdio session, and
by direct HTTP POSTs to the same `svc-stub service` process, in the same run.

The MCP path adds JSON-RPC over stdio, argument validation and the client's own checks to each
envelope; the ratio shows what that costs. Both paths send envelopes one after another (one client
at a time), so the figure is per-request latency, not the service's concurrent capacity.

Usage: python bench/intel.py [--count 300]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import _rows
import httpx
from _load import held_port, server_process
from mcp import ClientSession, StdioServerParameters, stdio_client

from server_stub.intel.envelope import key_bytes, sign
from server_stub.service.demo_data import write_demo_database

TOKEN = "bench-intel-token-" + "t" * 24
INTEL_KEY = "bench-intel-key-" + "k" * 24


def envelopes(prefix: str, count: int) -> list[dict[str, Any]]:
    now = datetime.now(UTC)
    key = key_bytes(INTEL_KEY)
    draft = {"source": "bench", "kind": "note", "body": {"symbol": "ABC", "view": "long"}}
    return [sign(draft | {"id": f"{prefix}-{index}"}, key, now) for index in range(count)]


async def over_mcp(base_url: str, batch: list[dict[str, Any]]) -> float:
    env = {**os.environ, "SERVICE_API_BASE": base_url, "SERVICE_API_TOKEN": TOKEN}
    server = StdioServerParameters(command=sys.executable, args=["-m", "svc_mcp"], env=env)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        start = time.perf_counter()
        for envelope in batch:
            result = await session.call_tool("submit_intel", {"envelope": envelope})
            if result.is_error or result.structured_content is None:
                raise RuntimeError(f"submit_intel failed: {result.content}")
        return len(batch) / (time.perf_counter() - start)


async def over_http(base_url: str, batch: list[dict[str, Any]]) -> float:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=base_url, headers=headers) as client:
        start = time.perf_counter()
        for envelope in batch:
            response = await client.post("/api/v1/intel", json=envelope)
            if response.status_code != 201:
                raise RuntimeError(f"intake answered {response.status_code}: {response.text}")
        return len(batch) / (time.perf_counter() - start)


def main() -> str:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=300, help="envelopes per path")
    _rows.add_option(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        db = Path(temp) / "service.db"
        write_demo_database(db)
        port = held_port()
        os.environ.update({"SERVICE_API_TOKEN": TOKEN, "SERVICE_INTEL_HMAC": INTEL_KEY})
        serve = ["-m", "server_stub", "service", "--db", str(db), "--port", str(port)]
        with server_process(serve, port, Path(temp) / "service.log", "/health/live"):
            base_url = f"http://127.0.0.1:{port}"
            asyncio.run(over_http(base_url, envelopes("warm", 20)))
            mcp_rate = asyncio.run(over_mcp(base_url, envelopes("mcp", args.count)))
            http_rate = asyncio.run(over_http(base_url, envelopes("http", args.count)))
    del os.environ["SERVICE_INTEL_HMAC"]
    figure = _rows.versus(
        "submit_intel over one MCP stdio session vs direct HTTP POST",
        mcp_rate,
        http_rate,
        "envelopes/s",
        "direct HTTP POST",
        "none set; the MCP path's overhead",
    )
    print(figure.line())
    _rows.write(args.json, [figure])
    return figure.line()


if __name__ == "__main__":
    main()
