"""Grouped answers from a data service that does not group (issue 40): "fees by symbol" over the
demo data, answered by the service's own SQL against svc-mcp's fallback (it pages the raw records
itself and groups them), through a real `svc-mcp` stdio server driven by the official MCP client.

Two `svc-stub service` processes on copies of the demo database: one that groups, one started with
`--without-group-by ignore` (or `refuse`). Each answers `get_fills group_by=symbol` `--runs` times;
the median wall time of a call is printed with the records the fallback read. The rows must be
equal.

Usage: uv run python bench/regroup.py [--runs 9] [--without-group-by ignore|refuse]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from _load import held_port
from mcp import ClientSession, StdioServerParameters, stdio_client

from server_stub.service.demo_data import write_demo_database

BIN = Path(sys.executable).parent
TOKEN = secrets.token_hex(20)


def start(db: Path, without: str | None) -> tuple[subprocess.Popen[bytes], str]:
    port = held_port()
    extra = ["--without-group-by", without] if without else []
    command = [str(BIN / "svc-stub"), "service", "--db", str(db), "--port", str(port), *extra]
    process = subprocess.Popen(
        command,
        env={**os.environ, "SERVICE_API_TOKEN": TOKEN},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            httpx.get(base + "/health/live")
            return process, base
        except httpx.TransportError:
            time.sleep(0.05)
    raise SystemExit(f"svc-stub service did not start on port {port}")


async def timed(base: str, runs: int) -> tuple[float, dict[str, Any]]:
    env = {**os.environ, "SERVICE_API_BASE": base, "SERVICE_API_TOKEN": TOKEN}
    server = StdioServerParameters(command=str(BIN / "svc-mcp"), env=env)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        times, structured = [], {}
        for _ in range(runs):
            started = time.perf_counter()
            result = await session.call_tool("get_fills", {"group_by": "symbol"})
            times.append(time.perf_counter() - started)
            assert not result.is_error, result.content
            structured = result.structured_content or {}
        return statistics.median(times), structured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--without-group-by", choices=("ignore", "refuse"), default="ignore")
    options = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-regroup-"))
    processes = []
    try:
        write_demo_database(folder / "template.db")
        answers = {}
        for kind, without in (
            ("service SQL", None),
            ("svc-mcp fallback", options.without_group_by),
        ):
            db = folder / kind.replace(" ", "-") / "service.db"
            db.parent.mkdir()
            shutil.copyfile(folder / "template.db", db)
            process, base = start(db, without)
            processes.append(process)
            answers[kind] = asyncio.run(timed(base, options.runs))
        for kind, (seconds, structured) in answers.items():
            computed = structured.get("computed")
            said = f", computed {computed}" if computed else ""
            print(f"fees by symbol, {kind:<17} {seconds * 1000:7.1f} ms median{said}")
        grouped = [structured["groups"] for _, structured in answers.values()]
        assert grouped[0] == grouped[1], "the fallback's rows differ from the service's"
        print("rows equal")
    finally:
        for process in processes:
            process.terminate()
            process.wait()
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
