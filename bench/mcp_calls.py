"""What svc-mcp costs a caller, beside its baselines, in one run.

(a) Start-up: wall time of `svc-mcp tools` and of `python -c "import mcp.server"`, medians of
    `--runs` alternating runs. Target: `svc-mcp tools` <= 30% of the import.
(b) Calls: `--calls` sequential `portal_whoami` calls over one stdio session against a local
    `svc-stub portal`, beside a direct httpx GET of /api/whoami (same stub, same session) and a bare
    MCPServer echo tool over stdio, interleaved in rounds of 100. Target: the tool call's median
    <= 1.5 x (echo median + direct GET median).

Usage: uv run python bench/mcp_calls.py [--calls 1000] [--runs 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import httpx
from _load import free_port, server_process
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.server import MCPServer

from server_stub.portal.admin import issue_session
from server_stub.portal.demo_data import write_demo_data

BIN = Path(sys.executable).parent
ROUND = 100
WARM_UP = 20


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def p99_ms(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=100)[98] * 1000


def wall_time(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def startup(runs: int) -> tuple[float, float]:
    """Medians (seconds) of `svc-mcp tools` and `import mcp.server`, run alternately."""
    tools, imports = [], []
    for _ in range(runs):
        tools.append(wall_time([str(BIN / "svc-mcp"), "tools"]))
        imports.append(wall_time([sys.executable, "-c", "import mcp.server"]))
    return statistics.median(tools), statistics.median(imports)


@contextmanager
def portal_stub(data: Path, log: Path) -> Iterator[str]:
    port = free_port()
    args = ["-m", "server_stub", "portal", "--data", str(data), "--port", str(port)]
    with server_process(args, port, log, "/api/page"):
        yield f"http://127.0.0.1:{port}"


Timed = Callable[[], Awaitable[object]]


async def measure(calls: int, contenders: dict[str, Timed]) -> dict[str, list[float]]:
    """Per-call latencies of each contender, interleaved in rounds so drift hits all alike."""
    for call in contenders.values():
        for _ in range(WARM_UP):
            await call()
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(calls // ROUND):
        for name, call in contenders.items():
            for _ in range(ROUND):
                started = time.perf_counter()
                await call()
                samples[name].append(time.perf_counter() - started)
    return samples


async def calls_against(base_url: str, token: str, calls: int) -> dict[str, list[float]]:
    whoami_server = StdioServerParameters(
        command=str(BIN / "svc-mcp"),
        env={"PORTAL_API_BASE": base_url, "PORTAL_SESSION_TOKEN": token},
    )
    echo_server = StdioServerParameters(
        command=sys.executable, args=[__file__, "--echo-server"], env={"PYTHONPATH": os.getcwd()}
    )
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx.AsyncClient(base_url=base_url, headers=headers) as http,
        stdio_client(whoami_server) as (whoami_read, whoami_write),
        ClientSession(whoami_read, whoami_write) as whoami_session,
        stdio_client(echo_server) as (echo_read, echo_write),
        ClientSession(echo_read, echo_write) as echo_session,
    ):
        await whoami_session.initialize()
        await echo_session.initialize()

        async def direct_get() -> object:
            response = await http.get("/api/whoami")
            response.raise_for_status()
            return response.json()

        async def whoami_tool() -> object:
            result = await whoami_session.call_tool("portal_whoami", {})
            assert not result.is_error, result.content
            return result.structured_content

        async def echo_tool() -> object:
            return (await echo_session.call_tool("echo", {"text": "ping"})).structured_content

        return await measure(
            calls,
            {
                "direct GET /api/whoami": direct_get,
                "echo over stdio": echo_tool,
                "portal_whoami over stdio": whoami_tool,
            },
        )


def serve_echo() -> None:
    server: MCPServer = MCPServer("echo", log_level="WARNING")

    @server.tool()
    def echo(text: str) -> str:
        """Returns its input."""
        return text

    server.run()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help="calls per contender (x100)")
    parser.add_argument("--runs", type=int, default=10, help="start-up runs per command")
    parser.add_argument("--echo-server", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.echo_server:
        serve_echo()
        return

    tools, imports = startup(args.runs)
    print(f"(a) start-up, medians of {args.runs}")
    print(f"    svc-mcp tools            {tools * 1000:8.1f} ms")
    print(f"    import mcp.server        {imports * 1000:8.1f} ms")
    share = tools / imports
    verdict = "ok" if share <= 0.30 else "MISSED"
    print(f"    ratio                    {share:8.2f}   (target <= 0.30: {verdict})")

    with tempfile.TemporaryDirectory() as temp:
        data = Path(temp) / "data"
        write_demo_data(data)
        token = issue_session(data, "alice", timedelta(hours=1))
        with portal_stub(data, Path(temp) / "portal.log") as base_url:
            samples = asyncio.run(calls_against(base_url, token, args.calls))
    print(f"(b) {args.calls} sequential calls each, interleaved in rounds of {ROUND}")
    for name, latencies in samples.items():
        print(
            f"    {name:26s} median {median_ms(latencies):7.3f} ms   p99 {p99_ms(latencies):7.3f} ms"
        )
    tool = median_ms(samples["portal_whoami over stdio"])
    budget = median_ms(samples["echo over stdio"]) + median_ms(samples["direct GET /api/whoami"])
    verdict = "ok" if tool <= 1.5 * budget else "MISSED"
    print(f"    tool / (echo + GET)      {tool / budget:8.2f}   (target <= 1.50: {verdict})")


if __name__ == "__main__":
    main()
