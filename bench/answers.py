"""Answers, not pages (issue 40): the fees-by-symbol question before and after `group_by`.

(a) Against `svc-mcp demo`'s data (the stubs as real processes), a real `svc-mcp` stdio server
    driven by the official MCP client answers "fees by symbol": before, by paging `get_fills` at
    its default page to the end and adding the fees here (as an agent would); after, with one
    `get_fills group_by=symbol` call. Calls, text characters and wall time of each; the two answers
    must be equal to the cent.
(b) A data service database grown to `--fills` fills (the demo's fills copied with new ids and
    times): the grouped query (`group_by=symbol`, and `group_by=day` over a 30-day window) beside
    the raw page query of the same route (`limit=100`), each the median of `--runs` runs, in
    process on the service's own read path (server_stub.service.db), cache off.

Usage: uv run python bench/answers.py [--fills 100000] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import _rows
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent

from server_stub.http import PageRequest
from server_stub.service.db import ServiceDatabase, TimeRange
from server_stub.service.demo_data import write_demo_database
from server_stub.service.groups import grouped_page, time_conditions
from svc_mcp.demo.stubs import running_stubs

BIN = Path(sys.executable).parent


def text_of(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


async def fees_by_symbol(variables: dict[str, str]) -> dict[str, dict[str, Any]]:
    server = StdioServerParameters(command=str(BIN / "svc-mcp"), env={**os.environ, **variables})
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        started = time.perf_counter()
        pages = [await session.call_tool("get_fills", {})]
        while cursor := (pages[-1].structured_content or {}).get("next_cursor"):
            pages.append(await session.call_tool("get_fills", {"cursor": cursor}))
        fees: dict[str, Decimal] = {}
        for page in pages:
            for fill in (page.structured_content or {})["result"]:
                fees[fill["symbol"]] = fees.get(fill["symbol"], Decimal(0)) + Decimal(
                    str(fill["fee"])
                )
        before_seconds = time.perf_counter() - started
        started = time.perf_counter()
        grouped = await session.call_tool("get_fills", {"group_by": "symbol"})
        after_seconds = time.perf_counter() - started
    rows = (grouped.structured_content or {})["groups"]
    answer = {row["symbol"]: Decimal(str(row["fees"])) for row in rows}
    assert answer == fees, (answer, fees)
    return {
        "before": {
            "calls": len(pages),
            "chars": sum(len(text_of(page)) for page in pages),
            "seconds": before_seconds,
        },
        "after": {"calls": 1, "chars": len(text_of(grouped)), "seconds": after_seconds},
    }


def grow(path: Path, fills: int) -> None:
    """Copies the demo's fills, with new ids and times a minute apart per copy, to `fills`."""
    with sqlite3.connect(path) as connection:
        have = connection.execute("SELECT COUNT(*) FROM fills").fetchone()[0]
        copy = 0
        while have < fills:
            copy += 1
            connection.execute(
                "INSERT INTO fills SELECT id || '-c' || ?, order_id, symbol, side, quantity, price,"
                " fee, liquidity, venue, strftime('%Y-%m-%dT%H:%M:%SZ', executed_at,"
                " '-' || ? || ' minutes') FROM fills WHERE id NOT LIKE '%-c%' LIMIT ?",
                (copy, copy, fills - have),
            )
            have = connection.execute("SELECT COUNT(*) FROM fills").fetchone()[0]


def median_seconds(run: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fills", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    _rows.add_option(parser)
    args = parser.parse_args()

    with running_stubs() as stubs:
        asked = asyncio.run(fees_by_symbol(stubs.mcp_variables()))
    before, after = asked["before"], asked["after"]
    print("(a) fees by symbol over MCP, demo data")
    for name, seen in asked.items():
        print(
            f"    {name:6s} {seen['calls']:3d} calls {seen['chars']:9,} chars "
            f"{seen['seconds'] * 1000:8.1f} ms"
        )

    folder = Path(tempfile.mkdtemp(prefix="bench-answers-"))
    try:
        db_path = folder / "service.db"
        write_demo_database(db_path)
        grow(db_path, args.fills)
        db = ServiceDatabase(db_path)
        window = time_conditions("executed_at", TimeRange("2025-06-01", "2025-07-01"))
        raw = median_seconds(lambda: db.fills(PageRequest(101, 0)), args.runs)
        by_symbol = median_seconds(
            lambda: grouped_page(db, "fills", "symbol", [], PageRequest(101, 0)), args.runs
        )
        by_day = median_seconds(
            lambda: grouped_page(db, "fills", "day", window, PageRequest(101, 0)), args.runs
        )
        db.close()
    finally:
        shutil.rmtree(folder)
    print(f"(b) {args.fills:,} fills, median of {args.runs} (cache off: limit 101)")
    print(f"    raw page (limit 100)              {raw * 1000:8.2f} ms")
    print(
        f"    group_by=symbol, all fills        {by_symbol * 1000:8.2f} ms  ratio {by_symbol / raw:.1f}"
    )
    print(
        f"    group_by=day, 30-day window       {by_day * 1000:8.2f} ms  ratio {by_day / raw:.1f}"
    )

    figures = [
        _rows.versus(
            "fees by symbol: MCP calls",
            after["calls"],
            before["calls"],
            "calls",
            "paging get_fills and adding",
            "1 call",
        ),
        _rows.versus(
            "fees by symbol: text characters",
            after["chars"],
            before["chars"],
            "chars",
            "paging get_fills and adding",
            "",
        ),
        _rows.versus(
            "fees by symbol: wall time",
            after["seconds"] * 1000,
            before["seconds"] * 1000,
            "ms",
            "paging get_fills and adding",
            "",
        ),
        _rows.versus(
            f"GET /fills?group_by=symbol over {args.fills:,} fills (SQL)",
            by_symbol * 1000,
            raw * 1000,
            "ms",
            "raw page of 100",
            "",
            note="one pass; no scan per group",
        ),
        _rows.versus(
            f"GET /fills?group_by=day, 30-day window, {args.fills:,} fills (SQL)",
            by_day * 1000,
            raw * 1000,
            "ms",
            "raw page of 100",
            "",
            note="through the time index",
        ),
    ]
    _rows.write(args.json, figures)


if __name__ == "__main__":
    main()
