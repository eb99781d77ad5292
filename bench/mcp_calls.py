"""What svc-mcp costs a caller, beside its baselines, in one run.

(a) Start-up: wall time of `svc-mcp tools`, `svc-mcp portal_whoami` (against a local portal
    stub, signed in) and `svc-mcp get_system` (against a local data service stub with a token),
    each beside `python -c "import mcp.server"`, medians of `--runs` paired runs (the four
    commands alternate within each run). Targets: tools <= 0.10x the import, each call <= 0.30x.
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
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import _rows
import httpx
from _load import held_port, server_process
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.server import MCPServer

from server_stub.portal.admin import issue_session
from server_stub.portal.demo_data import write_demo_data
from server_stub.service.demo_data import write_demo_database

BIN = Path(sys.executable).parent
ROUND = 100
WARM_UP = 20


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def p99_ms(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=100)[98] * 1000


def wall_time(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        command,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **env},
    )
    return time.perf_counter() - started


BASELINE = "import mcp.server"
STARTUP_TARGETS = {"svc-mcp tools": 0.10, "svc-mcp portal_whoami": 0.30, "svc-mcp get_system": 0.30}


def startup(runs: int, env: dict[str, str]) -> dict[str, float]:
    """Medians (seconds) of each command and of the baseline, run alternately in each round."""
    commands = {
        "svc-mcp tools": [str(BIN / "svc-mcp"), "tools"],
        "svc-mcp portal_whoami": [str(BIN / "svc-mcp"), "portal_whoami"],
        "svc-mcp get_system": [str(BIN / "svc-mcp"), "get_system"],
        BASELINE: [sys.executable, "-c", "import mcp.server"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            times[name].append(wall_time(command, env))
    return {name: statistics.median(samples) for name, samples in times.items()}


@contextmanager
def portal_stub(data: Path, log: Path) -> Iterator[str]:
    port = held_port()
    args = ["-m", "server_stub", "portal", "--data", str(data), "--port", str(port)]
    with server_process(args, port, log, "/api/page"):
        yield f"http://127.0.0.1:{port}"


@contextmanager
def service_stub(db: Path, token: str, log: Path) -> Iterator[str]:
    port = held_port()
    args = ["-m", "server_stub", "service", "--db", str(db), "--port", str(port)]
    with server_process(args, port, log, "/health/live", env={"SERVICE_API_TOKEN": token}):
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
    _rows.add_option(parser)
    args = parser.parse_args()
    if args.echo_server:
        serve_echo()
        return

    with tempfile.TemporaryDirectory() as temp:
        data, db = Path(temp) / "data", Path(temp) / "service.db"
        write_demo_data(data)
        write_demo_database(db)
        token = issue_session(data, "alice", timedelta(hours=1))
        service_token = secrets.token_urlsafe(32)
        with (
            portal_stub(data, Path(temp) / "portal.log") as base_url,
            service_stub(db, service_token, Path(temp) / "service.log") as service_url,
        ):
            env = {
                "PORTAL_API_BASE": base_url,
                "PORTAL_SESSION_TOKEN": token,
                "SERVICE_API_BASE": service_url,
                "SERVICE_API_TOKEN": service_token,
            }
            medians = startup(args.runs, env)
            print(f"(a) start-up, medians of {args.runs} paired runs")
            baseline = medians[BASELINE]
            print(f"    {BASELINE:26s} {baseline * 1000:8.1f} ms   (baseline)")
            figures = [
                _rows.versus(
                    f"start-up: `{name}` (median wall time)",
                    medians[name] * 1000,
                    baseline * 1000,
                    "ms",
                    f"`{BASELINE}`",
                    f"<= {target:.2f}",
                )
                for name, target in STARTUP_TARGETS.items()
            ]
            for name, target in STARTUP_TARGETS.items():
                share = medians[name] / baseline
                verdict = "ok" if share <= target else "MISSED"
                print(
                    f"    {name:26s} {medians[name] * 1000:8.1f} ms   ratio {share:5.2f}"
                    f"   (target <= {target:.2f}: {verdict})"
                )
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
    echo = median_ms(samples["echo over stdio"])
    figures.append(
        _rows.versus(
            "portal_whoami over stdio (median latency)",
            tool,
            budget,
            "ms",
            "echo tool over stdio + direct GET /api/whoami",
            "<= 1.50",
            f"echo {echo:.3f} ms + GET {budget - echo:.3f} ms",
        )
    )
    _rows.write(args.json, figures)


if __name__ == "__main__":
    main()
