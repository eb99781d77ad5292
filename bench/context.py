"""What svc-mcp puts into an agent's context, in characters, beside what the REST default gave.

Against `svc-mcp demo`'s data (the portal and data service stubs started as real processes), a
real `svc-mcp` stdio server is driven by the official MCP client:
(a) `tools/list`, for a client without and with MCP Apps views declared: the whole result as
    compact JSON (budget 20,000) and what a host shows the model,
    name + title + description + inputSchema of every tool (budget 10,000);
(b) each read tool's text content at default arguments (budget 8,000 each), beside the baseline:
    the REST default page (100 records) rendered as one JSON text, as an MCP result used to be.
    The totals of the 23 read tools are printed side by side with their ratio.

Usage: uv run python bench/context.py
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import _rows
import httpx
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import TextContent

from svc_mcp.demo.stubs import running_stubs
from svc_mcp.tools.table import TOOLS

BIN = Path(sys.executable).parent
LIST_BUDGET = 20_000
SHOWN_BUDGET = 10_000
RESULT_BUDGET = 8_000


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


APPS = {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}
"""What a client that renders MCP Apps views declares; the list then links the view tools."""


async def measure(
    variables: dict[str, str], extensions: dict[str, dict[str, Any]] | None = None
) -> tuple[int, int, dict[str, int]]:
    server = StdioServerParameters(command=str(BIN / "svc-mcp"), env={**os.environ, **variables})
    async with (
        stdio_client(server) as (read, write),
        ClientSession(read, write, extensions=extensions) as session,
    ):
        await session.initialize()
        listed = await session.list_tools()
        tools = [
            tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in listed.tools
        ]
        shown = sum(
            len(compact({k: tool.get(k) for k in ("name", "title", "description", "inputSchema")}))
            for tool in tools
        )
        results = {}
        for spec in TOOLS:
            if not spec.hints.read_only:
                continue
            result = await session.call_tool(spec.name, {})
            assert not result.is_error, result.content
            results[spec.name] = sum(
                len(block.text) for block in result.content if isinstance(block, TextContent)
            )
        return len(compact(tools)), shown, results


def baseline(variables: dict[str, str]) -> dict[str, int]:
    """The REST default page of each read tool, as one JSON text like the MCP result used to be."""
    sizes = {}
    for spec in TOOLS:
        if not spec.hints.read_only:
            continue
        base = variables[spec.backend.base_url_variable]
        token = variables[spec.backend.token_variables[0]]
        envelope = httpx.get(base + spec.path, headers={"Authorization": f"Bearer {token}"}).json()
        data = envelope["data"]
        structured = data if isinstance(data, dict) else {"result": data}
        if envelope.get("next_cursor"):
            structured["next_cursor"] = envelope["next_cursor"]
        sizes[spec.name] = len(json.dumps(structured, ensure_ascii=False))
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _rows.add_option(parser)
    args = parser.parse_args()
    with running_stubs() as stubs:
        variables = stubs.mcp_variables()
        listed, shown, results = asyncio.run(measure(variables))
        listed_views, shown_views, _ = asyncio.run(measure(variables, APPS))
        before = baseline(variables)
    ok = {True: "ok", False: "OVER"}
    print(f"(a) tools/list, {len(TOOLS)} tools, compact JSON")
    print(
        f"    whole result           {listed:8,} chars   (budget {LIST_BUDGET:,}: {ok[listed <= LIST_BUDGET]})"
    )
    print(
        f"    shown to the model     {shown:8,} chars   (budget {SHOWN_BUDGET:,}: {ok[shown <= SHOWN_BUDGET]})"
    )
    print("    (the same, for a client that declares MCP Apps views: `_meta.ui` links)")
    print(
        f"    whole result with views {listed_views:7,} chars   (budget {LIST_BUDGET:,}: {ok[listed_views <= LIST_BUDGET]})"
    )
    print(
        f"    shown to the model with views {shown_views:,} chars   (budget {SHOWN_BUDGET:,}: {ok[shown_views <= SHOWN_BUDGET]})"
    )
    print("(b) default results, text characters: now vs REST default page (100 records)")
    for name, size in results.items():
        print(f"    {name:26s} {size:8,}   vs {before[name]:8,}   ({ok[size <= RESULT_BUDGET]})")
    now, then = sum(results.values()), sum(before.values())
    print(
        f"    total of {len(results)} read tools    {now:8,}   vs {then:8,}   ratio {now / then:.2f}"
    )
    budgets = [
        ("whole result", listed, LIST_BUDGET),
        ("shown to the model", shown, SHOWN_BUDGET),
        ("whole result with views", listed_views, LIST_BUDGET),
        ("shown to the model with views", shown_views, SHOWN_BUDGET),
    ]
    figures = [
        _rows.Figure(f"tools/list: {name}", size, "chars", target=f"<= {budget:,}")
        for name, size, budget in budgets
    ]
    figures.append(
        _rows.versus(
            f"default results of the {len(results)} read tools, text characters",
            now,
            then,
            "chars",
            "REST default pages, as MCP results used to be",
            f"each <= {RESULT_BUDGET:,}",
        )
    )
    _rows.write(args.json, figures)


if __name__ == "__main__":
    main()
