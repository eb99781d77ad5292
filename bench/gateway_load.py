"""Many official-client sessions on one `svc-mcp --http` gateway, beside one client alone.

A data service stub and one gateway run on loopback. For each protocol era (the initialize
handshake, and 2026-07-28 after `server/discover`), first one official Python client calls
`get_system` back to back for `--seconds`, then `--clients` clients do the same at once. Each
session is connected and has made one call before the timed calls start (steady state).
Targets: the many clients' total calls/s at least the single client's, their p99 within 3x their
median, and no error.

Usage: uv run python bench/gateway_load.py [--clients 50] [--seconds 10]
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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import _rows
import httpx2
from _load import held_port, server_process
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

TOKEN = "bench-token-" + "k" * 32
MODES = {"initialize era": "legacy", "2026-07-28": "auto"}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time process `pid` has used so far."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Run:
    calls: int
    seconds: float
    latencies: list[float]
    errors: list[str]

    @property
    def rate(self) -> float:
        return self.calls / self.seconds

    def ms(self, percentile: int) -> float:
        return statistics.quantiles(self.latencies, n=100)[percentile - 1] * 1000


@dataclass
class Start:
    """Every session connects and makes one call first (the handshake and the tool list it
    fetches are not what is measured); then all start the timed calls together."""

    clients: int
    snapshot: Callable[[], dict[str, float]]
    ready: int = 0
    go: asyncio.Event | None = None
    deadline: float = 0.0
    started: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)


async def client(url: str, mode: str, seconds: float, start: Start, run: Run) -> None:
    assert start.go is not None
    try:
        async with (
            httpx2.AsyncClient(timeout=30) as http,
            Client(streamable_http_client(url, http_client=http), mode=mode) as mcp,
        ):
            await mcp.call_tool("get_system", {})
            start.ready += 1
            if start.ready == start.clients:
                start.cpu = start.snapshot()
                start.started = time.monotonic()
                start.deadline = start.started + seconds
                start.go.set()
            await start.go.wait()
            while time.monotonic() < start.deadline:
                began = time.perf_counter()
                result = await mcp.call_tool("get_system", {})
                run.latencies.append(time.perf_counter() - began)
                run.calls += 1
                if result.is_error:
                    run.errors.append(str(result.content)[:200])
    except Exception as exc:  # a failed session is an error of the run, not of the benchmark
        run.errors.append(f"{type(exc).__name__}: {exc}")
        start.ready += 1
        if start.ready == start.clients:
            start.go.set()


async def load(
    url: str, mode: str, clients: int, seconds: float, pids: dict[str, int]
) -> tuple[Run, dict[str, float]]:
    """The run, and the CPU seconds each of `pids` used during its timed part."""

    def snapshot() -> dict[str, float]:
        return {name: cpu_seconds(pid) for name, pid in pids.items()}

    run = Run(0, 0.0, [], [])
    start = Start(clients, snapshot, go=asyncio.Event())
    await asyncio.gather(*(client(url, mode, seconds, start, run) for _ in range(clients)))
    run.seconds = time.monotonic() - start.started
    end = snapshot()
    return run, {name: end[name] - start.cpu.get(name, end[name]) for name in pids}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=10.0, help="per measurement")
    _rows.add_option(parser)
    args = parser.parse_args()
    figures: list[_rows.Figure] = []
    root = Path(__file__).resolve().parent.parent
    missed = []
    with tempfile.TemporaryDirectory(prefix="svc-bench-") as temp:
        db = Path(temp) / "service.db"
        subprocess.run(
            [sys.executable, "-m", "server_stub", "demo-data", "service", "--db", str(db)],
            check=True,
            capture_output=True,
            cwd=root,
        )
        service_port, gateway_port = held_port(), held_port()
        service_args = ["-m", "server_stub", "service", "--db", str(db), "--port"]
        env = {"SERVICE_API_TOKEN": TOKEN}
        with (
            server_process(
                [*service_args, str(service_port), "--no-access-log"],
                service_port,
                Path(temp) / "service.log",
                "/health/live",
                env,
            ) as service,
            server_process(
                ["-m", "svc_mcp", "--http", "--no-auth", "--port", str(gateway_port)],
                gateway_port,
                Path(temp) / "gateway.log",
                "/mcp",
                {**env, "SERVICE_API_BASE": f"http://127.0.0.1:{service_port}"},
            ) as gateway,
        ):
            url = f"http://127.0.0.1:{gateway_port}/mcp"
            pids = {"gateway": gateway.pid, "service": service.pid, "clients": os.getpid()}
            print(
                f"get_system over one gateway (and one data service stub), {args.seconds:g} s "
                f"each: one client alone, then {args.clients} at once"
            )
            for era, mode in MODES.items():
                asyncio.run(load(url, mode, 4, 1.0, pids))  # warm-up
                alone, used_alone = asyncio.run(load(url, mode, 1, args.seconds, pids))
                many, used = asyncio.run(load(url, mode, args.clients, args.seconds, pids))
                busy = {n: seconds / many.seconds for n, seconds in used.items()}
                for label, run in (("1 client", alone), (f"{args.clients} clients", many)):
                    print(
                        f"  {era:<15} {label:<11} {run.rate:7.1f} calls/s  median "
                        f"{run.ms(50):6.1f} ms  p99 {run.ms(99):7.1f} ms  errors {len(run.errors)}"
                    )
                print(
                    f"  {era:<15} CPU busy with {args.clients} clients: "
                    + ", ".join(f"{name} {share:.0%}" for name, share in busy.items())
                    + f"; gateway CPU per call: {used_alone['gateway'] / alone.calls * 1000:.2f} ms alone,"
                    f" {used['gateway'] / many.calls * 1000:.2f} ms with {args.clients} clients"
                )
                throughput = many.rate / alone.rate
                tail = many.ms(99) / many.ms(50)
                ok = throughput >= 1.0 and tail <= 3.0 and not many.errors and not alone.errors
                print(
                    f"  {era:<15} ratio {throughput:.2f} of the single client's calls/s "
                    f"(target >= 1.00), p99/median {tail:.2f} (target <= 3.00): "
                    f"{'ok' if ok else 'MISSED'}"
                )
                figures.append(
                    _rows.versus(
                        f"get_system, {args.clients} official-client sessions on one gateway, {era}",
                        many.rate,
                        alone.rate,
                        "calls/s",
                        "1 client alone",
                        ">= 1.00 and p99/median <= 3.00",
                        f"p99/median {tail:.2f}; median {many.ms(50):.1f} ms, p99 "
                        f"{many.ms(99):.1f} ms; errors {len(alone.errors + many.errors)}; "
                        + ("ok" if ok else "MISSED"),
                    )
                )
                for error in (alone.errors + many.errors)[:3]:
                    print(f"    error: {error}")
                if not ok:
                    missed.append(era)
    _rows.write(args.json, figures)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
