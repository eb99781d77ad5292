"""Soak (issue 33): the `svc-mcp --http` gateway and the data service stub together, under steady
MCP calls (reads, and `submit_intel` with new envelopes and repeats), for `--seconds` (default 60;
CI's long run: 600). Samples each process's resident memory and open files every second, prints
their slopes per minute over the second half (after the warm-up) beside the start figure, and checks that every acknowledged envelope is
stored exactly once: 0 lost, 0 duplicated. Errors are counted by kind.

Usage: uv run python bench/soak.py [--seconds 60] [--clients 8]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from _load import free_port, server_process
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from server_stub.intel.envelope import key_bytes, sign
from server_stub.service.demo_data import write_demo_database

READS = ("get_system", "get_positions", "get_intel", "get_events")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def slope_per_minute(samples: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, value), per minute."""
    n = len(samples)
    if n < 2:
        return 0.0
    mean_t = sum(t for t, _ in samples) / n
    mean_v = sum(v for _, v in samples) / n
    spread = sum((t - mean_t) ** 2 for t, _ in samples)
    if spread == 0:
        return 0.0
    return 60 * sum((t - mean_t) * (v - mean_v) for t, v in samples) / spread


class Tally:
    def __init__(self) -> None:
        self.acknowledged: set[str] = set()
        self.errors: Counter[str] = Counter()
        self.calls = 0


async def client(url: str, key: bytes, deadline: float, tally: Tally) -> None:
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        sent: list[dict[str, object]] = []
        turn = 0
        while time.monotonic() < deadline:
            turn += 1
            if turn % 4 == 0:
                # Every other write repeats one already sent: it must be stored once.
                if sent and turn % 8 == 0:
                    envelope = sent[turn % len(sent)]
                else:
                    draft = {
                        "id": secrets.token_hex(8),
                        "source": "soak",
                        "kind": "note",
                        "body": {"n": turn},
                    }
                    envelope = sign(draft, key, datetime.now(UTC))
                    sent.append(envelope)
                result = await session.call_tool("submit_intel", {"envelope": envelope})
                if not result.is_error and result.structured_content:
                    tally.acknowledged.add(str(result.structured_content["id"]))
            else:
                result = await session.call_tool(READS[turn % len(READS)], {})
            tally.calls += 1
            if result.is_error:
                tally.errors[str((result.structured_content or {}).get("kind"))] += 1


async def sample(
    pids: dict[str, int], deadline: float, into: dict[str, list[tuple[float, float, int]]]
) -> None:
    started = time.monotonic()
    while time.monotonic() < deadline:
        for name, pid in pids.items():
            into[name].append((time.monotonic() - started, rss_mib(pid), open_files(pid)))
        await asyncio.sleep(1.0)


def stored(db: Path) -> tuple[set[str], int]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
        rows = [row[0] for row in connection.execute("SELECT id FROM intel_inbox")]
    return set(rows), len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--clients", type=int, default=8)
    options = parser.parse_args()
    token, intel_key = secrets.token_hex(24), secrets.token_hex(24)
    with tempfile.TemporaryDirectory() as root_name:
        root = Path(root_name)
        db = root / "service.db"
        write_demo_database(db)
        before, _ = stored(db)
        service_port, gateway_port = free_port(), free_port()
        service_env = {"SERVICE_API_TOKEN": token, "SERVICE_INTEL_HMAC": intel_key}
        gateway_env = {
            "SERVICE_API_BASE": f"http://127.0.0.1:{service_port}",
            "SERVICE_API_TOKEN": token,
            "PORTAL_API_BASE": "http://127.0.0.1:9",
        }
        with (
            server_process(
                [
                    "-m",
                    "server_stub",
                    "service",
                    "--db",
                    str(db),
                    "--port",
                    str(service_port),
                    "--no-access-log",
                ],
                service_port,
                root / "service.log",
                "/health/live",
                service_env,
            ) as service,
            server_process(
                ["-m", "svc_mcp", "--http", "--no-auth", "--port", str(gateway_port)],
                gateway_port,
                root / "gateway.log",
                "/mcp",
                gateway_env,
            ) as gateway,
        ):
            pids = {"gateway": gateway.pid, "service": service.pid}
            samples: dict[str, list[tuple[float, float, int]]] = {name: [] for name in pids}
            tally = Tally()
            url = f"http://127.0.0.1:{gateway_port}/mcp"

            async def run() -> None:
                deadline = time.monotonic() + options.seconds
                await asyncio.gather(
                    sample(pids, deadline, samples),
                    *(
                        client(url, key_bytes(intel_key), deadline, tally)
                        for _ in range(options.clients)
                    ),
                )

            asyncio.run(run())
        ids, rows = stored(db)
    new = ids - before
    lost = len(tally.acknowledged - new)
    duplicated = rows - len(ids)
    print(
        f"soak: {options.seconds:g} s, {options.clients} clients, {tally.calls:,} calls, "
        f"{len(tally.acknowledged):,} envelopes acknowledged"
    )
    print(f"lost {lost}, duplicated {duplicated} (target 0 and 0)")
    print(f"errors: {dict(tally.errors) or 0}")
    for name, points in samples.items():
        # The slope of the second half: the first holds the warm-up (connections, caches).
        steady = points[len(points) // 2 :]
        rss = [(t, memory) for t, memory, _ in steady]
        fds = [(t, float(files)) for t, _, files in steady]
        print(
            f"{name}: RSS {points[0][1]:.0f} -> {points[-1][1]:.0f} MiB, slope "
            f"{slope_per_minute(rss):+.2f} MiB/min (baseline: 0); open files {points[0][2]} -> "
            f"{points[-1][2]}, slope {slope_per_minute(fds):+.2f}/min (baseline: 0)"
        )
    if lost or duplicated:
        sys.exit(1)


if __name__ == "__main__":
    main()
