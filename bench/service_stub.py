"""Benchmarks of the data service stub.

1. Throughput: requests per second of `GET /api/v1/system` with a bearer token against a real
   `python -m server_stub.service service` process (access log on, and once more with
   `--no-access-log`), and of a one-route Starlette JSON app under uvicorn's defaults, measured in
   the same run, alternating, with a fixed request count per round and a time bound.
   Target: service (access log on) / bare >= 0.8.
2. Guard memory: failures from 1,000,000 distinct addresses (every 1000th one failing 8 times and
   so locked), resident growth and traced allocations. Target: < 64 MiB, and every address locked
   in the last 15 minutes still locked. A second, worst-case scenario locks all 1,000,000 addresses
   and shows the documented bound (MAX_TRACKED_ADDRESSES) at work.

Run: uv run python bench/service_stub.py [--requests 20000] [--rounds 3] [--skip-memory]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import _rows  # noqa: E402
from _load import cpu_seconds, held_port, server_process  # noqa: E402

from server_stub.service.demo_data import write_demo_database  # noqa: E402
from server_stub.service.guard import MAX_TRACKED_ADDRESSES, BruteForceGuard  # noqa: E402

TOKEN = "bench-token-" + "k" * 32
CONNECTIONS = 16
TIME_BOUND_SECONDS = 60.0
MiB = 1024 * 1024


# --- servers ---------------------------------------------------------------------------------


def serve_bare(port: int) -> None:
    """A one-route Starlette JSON app under uvicorn's defaults (its access log on, httptools and
    uvloop where installed)."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    payload = {
        "ok": True,
        "data": {
            "mode": "running",
            "trading_enabled": True,
            "mode_reason": None,
            "account": "DEMO-001",
            "base_currency": "USD",
            "equity": 1046746.33,
            "cash": 864426.63,
            "gross_exposure": 245515.7,
            "net_exposure": 182319.7,
            "unrealized_pnl": 2046.43,
            "open_positions": 4,
            "open_orders": 4,
            "daemon_version": "1.8.3",
            "started_at": "2025-06-24T12:55:00Z",
            "last_heartbeat_at": "2025-06-30T20:00:00Z",
            "updated_at": "2025-06-30T20:00:00Z",
        },
    }

    async def system(request: Request) -> Response:
        return JSONResponse(payload)

    app = Starlette(routes=[Route("/api/v1/system", system)])
    # uvicorn's defaults: its access log on, its fastest parser and loop where installed.
    uvicorn.run(app, host="127.0.0.1", port=port)


@contextmanager
def process(
    args: list[str], port: int, log: Path, env: dict[str, str]
) -> Iterator[tuple[str, int]]:
    with server_process(args, port, log, "/api/v1/system", env) as child:
        yield f"http://127.0.0.1:{port}", child.pid


# --- load generator: keep-alive HTTP/1.1 over raw asyncio streams ------------------------------


async def _worker(port: int, request: bytes, quota: list[int], deadline: float) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    done = 0
    try:
        while quota[0] > 0 and time.monotonic() < deadline:
            quota[0] -= 1
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 200"):
                raise RuntimeError(f"unexpected response: {head[:80]!r}")
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            await reader.readexactly(length)
            done += 1
    finally:
        writer.close()
    return done


async def _load(port: int, path: str, count: int) -> tuple[int, float]:
    request = (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {TOKEN}\r\nAccept: application/json\r\n\r\n"
    ).encode()
    quota = [count]
    deadline = time.monotonic() + TIME_BOUND_SECONDS
    started = time.perf_counter()
    done = await asyncio.gather(
        *(_worker(port, request, quota, deadline) for _ in range(CONNECTIONS))
    )
    return sum(done), time.perf_counter() - started


def run_round(target: tuple[str, int], count: int) -> tuple[float, float]:
    """(requests per second, server CPU microseconds per request) for one round."""
    base, pid = target
    port = int(base.rsplit(":", 1)[1])
    cpu_before = cpu_seconds(pid)
    done, elapsed = asyncio.run(_load(port, "/api/v1/system", count))
    return done / elapsed, (cpu_seconds(pid) - cpu_before) / done * 1e6


def throughput(requests: int, rounds: int) -> list[_rows.Figure]:
    with tempfile.TemporaryDirectory(prefix="svc-bench-") as temp:
        db = Path(temp) / "service.db"
        write_demo_database(db)
        ports = [held_port() for _ in range(3)]

        def service_args(port: int, *extra: str) -> list[str]:
            return [
                "-m",
                "server_stub.service",
                "service",
                "--db",
                str(db),
                "--port",
                str(port),
                *extra,
            ]

        env = {"SERVICE_API_TOKEN": TOKEN}
        with (
            process(
                [__file__, "--serve-bare", str(ports[0])], ports[0], Path(temp) / "bare.log", {}
            ) as bare,
            process(service_args(ports[1]), ports[1], Path(temp) / "service.log", env) as logged,
            process(
                service_args(ports[2], "--no-access-log"), ports[2], Path(temp) / "quiet.log", env
            ) as quiet,
        ):
            targets = {"bare": bare, "service": logged, "service_quiet": quiet}
            for target in targets.values():
                run_round(target, min(2000, requests))  # warm-up
            rates: dict[str, list[float]] = {name: [] for name in targets}
            cpu: dict[str, list[float]] = {name: [] for name in targets}
            for _ in range(rounds):
                for name, target in targets.items():
                    round_rate, cpu_per_request = run_round(target, requests)
                    rates[name].append(round_rate)
                    cpu[name].append(cpu_per_request)
            log_lines = (Path(temp) / "service.log").read_text().count('"route":"/api/v1/system"')
    rate = {name: statistics.median(values) for name, values in rates.items()}
    cost = {name: statistics.median(values) for name, values in cpu.items()}

    def line(label: str, name: str) -> str:
        rates_text = ", ".join(f"{r:.0f}" for r in rates[name])
        cpu_text = ", ".join(f"{c:.0f}" for c in cpu[name])
        return (
            f"  {label:<34} {rate[name]:7.0f} req/s  {cost[name]:6.0f} us CPU/req"
            f"  (rounds: {rates_text} req/s; {cpu_text} us)"
        )

    print(
        f"throughput: {rounds} rounds x {requests} requests, {CONNECTIONS} keep-alive "
        "connections, one server process each, rounds alternating; baseline: a one-route "
        "Starlette app under uvicorn's defaults"
    )
    print(line("bare Starlette JSON route", "bare"))
    print(line("service (default: access log on)", "service"))
    print(line("service --no-access-log", "service_quiet"))
    figures = []
    for label, name, key, goal in (
        ("default", "service", "service (default: access log on)", ">= 0.80"),
        ("--no-access-log", "service_quiet", "service --no-access-log", "none (the log's cost)"),
    ):
        by_cpu = cost["bare"] / cost[name]
        print(
            f"  ratio service/bare ({label}): {rate[name] / rate['bare']:.2f} by req/s,"
            f" {by_cpu:.2f} by server CPU per request  (target >= 0.80)"
        )
        figures.append(
            _rows.versus(
                f"GET /api/v1/system, {key}",
                rate[name],
                rate["bare"],
                "req/s",
                "bare Starlette route",
                goal,
                f"by server CPU per request: {by_cpu:.2f}",
            )
        )
    print(f"  access-log lines written by the default run: {log_lines}")
    return figures


# --- guard memory ------------------------------------------------------------------------------


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def address(index: int) -> str:
    return f"{10 + (index >> 24)}.{(index >> 16) & 255}.{(index >> 8) & 255}.{index & 255}"


def fill_guard(distinct: int, lock_every: int) -> BruteForceGuard:
    """Failures from `distinct` addresses over 10 minutes of fake time: every `lock_every`-th
    address fails 8 times (locked), the others once. Every lock is younger than 15 minutes."""
    now = [0.0]
    guard = BruteForceGuard(lambda: now[0])
    step = 600.0 / distinct
    for index in range(distinct):
        key = address(index)
        for _ in range(8 if index % lock_every == 0 else 1):
            guard.record_failure(key, via="authorization")
        now[0] += step
    return guard


def measure(label: str, distinct: int, lock_every: int, memory: Callable[[], int]) -> _rows.Figure:
    gc.collect()
    before = memory()
    started = time.perf_counter()
    guard = fill_guard(distinct, lock_every)
    elapsed = time.perf_counter() - started
    gc.collect()
    grown = memory() - before
    locked_indices = range(0, distinct, lock_every)
    # Within the bound every lock must hold; beyond it, the newest MAX_TRACKED_ADDRESSES must.
    expected = locked_indices[-MAX_TRACKED_ADDRESSES:]
    held = sum(1 for index in expected if guard.retry_after(address(index)) is not None)
    held_total = sum(1 for index in locked_indices if guard.retry_after(address(index)) is not None)
    verdict = "ok" if held == len(expected) and grown < 64 * MiB else "FAIL"
    print(
        f"  {label:<38} {grown / MiB:6.1f} MiB  tracked {guard.tracked:>7,}  still locked"
        f" {held_total:>7,} of {len(locked_indices):>9,}  ({elapsed:4.1f} s)  {verdict}"
    )
    if verdict == "FAIL":
        raise SystemExit(f"FAIL: {label}")
    return _rows.versus(
        f"guard memory, 1,000,000 addresses: {label}",
        grown / MiB,
        64,
        "MiB",
        "the bound",
        "< 64 MiB",
        f"{held_total:,} of {len(locked_indices):,} locks held; {guard.tracked:,} tracked",
    )


def traced() -> int:
    return tracemalloc.get_traced_memory()[0]


MEMORY_SCENARIOS = {
    "rss-sparse": ("RSS growth, 1 in 1000 locked", 1000, False),
    "rss-all": ("RSS growth, all locked (worst case)", 1, False),
    "traced-sparse": ("traced growth, 1 in 1000 locked", 1000, True),
}


def memory_scenario(name: str) -> None:
    import logging

    logging.getLogger("server_stub.security").setLevel(logging.CRITICAL)
    label, lock_every, use_tracemalloc = MEMORY_SCENARIOS[name]
    if use_tracemalloc:
        tracemalloc.start()
    figure = measure(label, 1_000_000, lock_every, traced if use_tracemalloc else resident_bytes)
    print(json.dumps(asdict(figure)))  # the parent's row, on the last line


def guard_memory() -> list[_rows.Figure]:
    print(
        "guard memory: failures from 1,000,000 distinct addresses within 10 minutes, each "
        f"scenario in a fresh process; bound MAX_TRACKED_ADDRESSES = {MAX_TRACKED_ADDRESSES:,}"
    )
    figures = []
    for name in MEMORY_SCENARIOS:
        done = subprocess.run(
            [sys.executable, __file__, "--memory-scenario", name],
            check=True,
            capture_output=True,
            text=True,
        )
        *lines, row = done.stdout.splitlines()
        print(*lines, sep="\n")
        figures.append(_rows.Figure(**json.loads(row)))
    print(
        "  target: growth < 64 MiB; every lock younger than 15 minutes kept while at most "
        f"{MAX_TRACKED_ADDRESSES:,} addresses are locked at once (beyond that, the newest "
        f"{MAX_TRACKED_ADDRESSES:,} locks are kept and the oldest dropped first)"
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--serve-bare", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument("--memory-scenario", choices=MEMORY_SCENARIOS, help=argparse.SUPPRESS)
    _rows.add_option(parser)
    args = parser.parse_args()
    if args.memory_scenario:
        memory_scenario(args.memory_scenario)
        return
    if args.serve_bare:
        serve_bare(args.serve_bare)
        return
    figures = []
    if not args.skip_throughput:
        figures += throughput(args.requests, args.rounds)
    if not args.skip_memory:
        figures += guard_memory()
    _rows.write(args.json, figures)


if __name__ == "__main__":
    main()
