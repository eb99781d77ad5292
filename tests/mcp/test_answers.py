"""Answers, not pages (issue 40), on real processes against `svc-mcp demo`'s data: every
`group_by` of every list, over everything and over a since/until window, gives the same rows over
REST, the CLI (`svc-mcp get_fills --group-by symbol`) and MCP (a real stdio `svc-mcp` driven by
the official client), equal to what the raw records add up to; and `limit=1000` never returns a
text over 24,000 characters, while paging to the end loses no record and repeats none."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp import ClientSession
from mcp.types import CallToolResult, TextContent

from svc_mcp.cli import main as svc_mcp_cli
from svc_mcp.core.bounded import MAX_RESULT_CHARS
from svc_mcp.demo.stubs import DemoStubs, running_stubs
from tests.e2e import e2e_fixture
from tests.mcp.conftest import over_stdio, run_in_process
from tests.service.grouping import CASES, expected_groups

TOOLS = {
    "/api/v1/fills": "get_fills",
    "/api/v1/orders": "get_orders",
    "/api/v1/pnl": "get_pnl",
    "/api/v1/events": "get_events",
}
WINDOWS = {
    "/api/v1/pnl": {"since": "2025-04-01", "until": "2025-06-01"},
    "/api/v1/fills": {"since": "2025-05-01T00:00:00", "until": "2025-06-15T00:00:00"},
    "/api/v1/orders": {"since": "2025-05-01T00:00:00", "until": "2025-06-15T00:00:00"},
    "/api/v1/events": {"since": "2025-04-01T00:00:00", "until": "2025-06-15T00:00:00"},
}


@e2e_fixture(scope="module")
def stubs() -> Iterator[DemoStubs]:
    with running_stubs() as running:
        yield running


def rest(stubs: DemoStubs, path: str, **params: Any) -> list[dict[str, Any]]:
    variables = stubs.mcp_variables()
    response = httpx.get(
        variables["SERVICE_API_BASE"] + path,
        params={"limit": 1000, **params},
        headers={"Authorization": f"Bearer {variables['SERVICE_API_TOKEN']}"},
    )
    body = response.json()
    assert body["ok"], body
    assert "next_cursor" not in body
    rows: list[dict[str, Any]] = body["data"]
    return rows


def text_of(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


@pytest.fixture(scope="module")
def mcp_answers(stubs: DemoStubs) -> dict[tuple[str, str, bool], list[CallToolResult]]:
    """Each case's pages, to the end (order_id groups do not fit one result)."""

    async def use(session: ClientSession) -> dict[tuple[str, str, bool], list[CallToolResult]]:
        await session.initialize()
        answers = {}
        for path, group_by, window in CASES:
            arguments = {"group_by": group_by, "limit": 1000, **(WINDOWS[path] if window else {})}
            pages = [await session.call_tool(TOOLS[path], arguments)]
            while cursor := (pages[-1].structured_content or {}).get("next_cursor"):
                pages.append(await session.call_tool(TOOLS[path], {**arguments, "cursor": cursor}))
            answers[(path, group_by, window)] = pages
        return answers

    return asyncio.run(over_stdio(stubs.mcp_variables(), use))


@pytest.mark.parametrize(("path", "group_by", "window"), CASES)
def test_rest_cli_and_mcp_give_the_rows_the_records_add_up_to(
    stubs: DemoStubs,
    mcp_answers: dict[tuple[str, str, bool], list[CallToolResult]],
    path: str,
    group_by: str,
    window: bool,
) -> None:
    filters = WINDOWS[path] if window else {}
    expected = expected_groups(path, group_by, rest(stubs, path, **filters))
    assert rest(stubs, path, group_by=group_by, **filters) == expected

    pages = mcp_answers[(path, group_by, window)]
    for page in pages:
        assert not page.is_error, text_of(page)
        assert len(text_of(page)) <= MAX_RESULT_CHARS
        assert json.loads(text_of(page).split("\n")[0]) == page.structured_content
    assert [row for page in pages for row in (page.structured_content or {})["groups"]] == expected

    flags = [f"--{name.replace('_', '-')}={value}" for name, value in filters.items()]
    cli = run_in_process(
        svc_mcp_cli.main,
        [TOOLS[path], "--group-by", group_by, "--limit", "1000", *flags],
        stubs.mcp_variables(),
    )
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout) == expected


async def _page_to_the_end(session: ClientSession, tool: str) -> list[CallToolResult]:
    await session.initialize()
    pages = [await session.call_tool(tool, {"limit": 1000})]
    while cursor := (pages[-1].structured_content or {}).get("next_cursor"):
        assert len(pages) < 100, "paging ends"
        pages.append(await session.call_tool(tool, {"limit": 1000, "cursor": cursor}))
    return pages


@pytest.mark.parametrize("tool", ["get_fills", "get_orders", "get_events"])
def test_limit_1000_stays_within_the_bound_and_loses_nothing(stubs: DemoStubs, tool: str) -> None:
    pages = asyncio.run(
        over_stdio(stubs.mcp_variables(), lambda session: _page_to_the_end(session, tool))
    )
    path = next(path for path, name in TOOLS.items() if name == tool)
    records = rest(stubs, path)
    assert len(json.dumps(records, separators=(",", ":"))) > MAX_RESULT_CHARS, "cut is tested"
    assert len(pages) > 1
    for page in pages:
        assert not page.is_error, text_of(page)
        assert len(text_of(page)) <= MAX_RESULT_CHARS
        assert json.loads(text_of(page).split("\n")[0]) == page.structured_content
    given = [record for page in pages for record in (page.structured_content or {})["result"]]
    assert given == records, "every record exactly once, in order"
