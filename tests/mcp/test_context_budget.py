"""What svc-mcp puts into an agent's context, measured through the official MCP client over stdio
against `svc-mcp demo`'s data: the tool list and every default result stay inside their budgets,
nothing is lost (paging with the hinted cursor returns every record once), `fields` cuts records
down, and bad arguments are tool errors caught before any request is sent."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import jsonschema
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult, ListToolsResult, TextContent

from svc_mcp.cli import main as svc_mcp_cli
from svc_mcp.core.toolspec import ToolSpec
from svc_mcp.demo.stubs import DemoStubs, running_stubs
from svc_mcp.tools.table import TOOLS
from tests.e2e import e2e_fixture
from tests.mcp.conftest import SVC_MCP, in_memory, over_stdio, process_env, run_in_process
from tests.support import closed_url
from tests.views.conftest import APPS

TOOL_LIST_BUDGET = 20_000
SHOWN_BUDGET = 10_000
RESULT_BUDGET = 8_000
READS = [spec for spec in TOOLS if spec.hints.read_only]
LISTS = [spec for spec in READS if spec.many]
HINT = re.compile(r'^More records: call (\w+) again with the same arguments and cursor=("[^"]*")')


def compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def text_of(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


def hinted_cursor(result: CallToolResult, tool: str) -> str | None:
    """The cursor the result's last line tells the agent to pass, if it has such a line."""
    lines = text_of(result).split("\n")
    if len(lines) == 1:
        return None
    assert len(lines) == 2, "one line of JSON, one line of hint"
    hint = HINT.match(lines[1])
    assert hint is not None, lines[1]
    assert hint[1] == tool
    cursor: str = json.loads(hint[2])
    return cursor


@dataclass
class Seen:
    listed: ListToolsResult
    defaults: dict[str, CallToolResult]
    pages: dict[str, list[CallToolResult]]
    fields: CallToolResult
    unknown_field: CallToolResult


async def _follow(session: ClientSession, spec: ToolSpec) -> list[CallToolResult]:
    pages = [await session.call_tool(spec.name, {})]
    while (cursor := hinted_cursor(pages[-1], spec.name)) is not None:
        assert len(pages) < 200, "paging ends"
        pages.append(await session.call_tool(spec.name, {"cursor": cursor}))
    return pages


async def _see(session: ClientSession) -> Seen:
    await session.initialize()
    return Seen(
        listed=await session.list_tools(),
        defaults={spec.name: await session.call_tool(spec.name, {}) for spec in READS},
        pages={spec.name: await _follow(session, spec) for spec in LISTS},
        fields=await session.call_tool("get_orders", {"fields": ["id", "status"], "limit": 5}),
        unknown_field=await session.call_tool("get_orders", {"fields": ["id", "secret"]}),
    )


@e2e_fixture(scope="module")
def stubs() -> Iterator[DemoStubs]:
    with running_stubs() as running:
        yield running


@pytest.fixture(scope="module")
def seen(stubs: DemoStubs) -> Seen:
    return asyncio.run(over_stdio(stubs.mcp_variables(), _see))


SHOWN = ("name", "title", "description", "inputSchema")


def whole_tools(listed: ListToolsResult) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = listed.model_dump(by_alias=True, exclude_none=True, mode="json")[
        "tools"
    ]
    return tools


def test_the_tool_list_fits(seen: Seen) -> None:
    whole = compact(seen.listed.model_dump(by_alias=True, exclude_none=True, mode="json"))
    assert len(whole) <= TOOL_LIST_BUDGET
    # Counted as bench/context.py and docs/tools.md count it: each tool's four fields as an object.
    shown = sum(
        len(compact({key: dumped.get(key) for key in SHOWN})) for dumped in whole_tools(seen.listed)
    )
    assert shown <= SHOWN_BUDGET
    assert [tool.name for tool in seen.listed.tools] == [spec.name for spec in TOOLS]
    for tool in seen.listed.tools:
        read_only = tool.annotations is not None and tool.annotations.read_only_hint
        assert (tool.output_schema is not None) or not read_only, tool.name


def test_the_tool_list_fits_for_a_client_that_renders_views(stubs: DemoStubs) -> None:
    """With MCP Apps declared each view tool carries a `_meta.ui` link: the whole list grows a
    little, and what the model is shown does not change."""

    async def listed() -> ListToolsResult:
        server = StdioServerParameters(command=SVC_MCP, env=process_env(stubs.mcp_variables()))
        async with (
            stdio_client(server) as (read, write),
            ClientSession(read, write, extensions=APPS) as session,
        ):
            await session.initialize()
            return await session.list_tools()

    with_views = asyncio.run(listed())
    whole = compact(with_views.model_dump(by_alias=True, exclude_none=True, mode="json"))
    assert len(whole) <= TOOL_LIST_BUDGET
    assert any(tool.meta for tool in with_views.tools)
    shown = sum(
        len(compact([tool.name, tool.title, tool.description, tool.input_schema]))
        for tool in with_views.tools
    )
    assert shown <= SHOWN_BUDGET


@pytest.mark.parametrize("spec", READS, ids=lambda spec: spec.name)
def test_each_default_result_fits_and_matches_its_schema(seen: Seen, spec: ToolSpec) -> None:
    result = seen.defaults[spec.name]
    assert not result.is_error, text_of(result)
    text = text_of(result)
    assert len(text) <= RESULT_BUDGET
    assert json.loads(text.split("\n")[0]) == result.structured_content, "compact, the same data"
    schema = next(tool.output_schema for tool in seen.listed.tools if tool.name == spec.name)
    jsonschema.validate(result.structured_content, schema)


def _rest_records(stubs: DemoStubs, spec: ToolSpec) -> list[Any]:
    variables = stubs.mcp_variables()
    token = variables[spec.backend.token_variables[0]]
    response = httpx.get(
        variables[spec.backend.base_url_variable] + spec.path,
        params={"limit": 1000},
        headers={"Authorization": f"Bearer {token}"},
    )
    body = response.json()
    assert "next_cursor" not in body, "the demo data fits one REST page of 1000"
    records: list[Any] = body["data"]
    return records


@pytest.mark.parametrize("spec", LISTS, ids=lambda spec: spec.name)
def test_paging_with_the_hinted_cursor_loses_nothing(
    seen: Seen, stubs: DemoStubs, spec: ToolSpec
) -> None:
    pages = seen.pages[spec.name]
    records = [record for page in pages for record in (page.structured_content or {})["result"]]
    assert records == _rest_records(stubs, spec), "every record exactly once, in order"
    for page in pages[:-1]:
        assert (page.structured_content or {})["next_cursor"] == hinted_cursor(page, spec.name)
    assert "next_cursor" not in (pages[-1].structured_content or {})


def test_a_default_page_is_smaller_than_the_rest_page(seen: Seen, stubs: DemoStubs) -> None:
    orders = seen.defaults["get_orders"].structured_content or {}
    assert len(orders["result"]) == 15
    assert len(_rest_records(stubs, next(s for s in LISTS if s.name == "get_orders"))) > 100


def test_fields_cut_each_record_down(seen: Seen, stubs: DemoStubs) -> None:
    result = seen.fields
    assert not result.is_error, text_of(result)
    records = (result.structured_content or {})["result"]
    orders = next(spec for spec in LISTS if spec.name == "get_orders")
    full = _rest_records(stubs, orders)[:5]
    assert records == [{"id": order["id"], "status": order["status"]} for order in full]
    schema = next(tool.output_schema for tool in seen.listed.tools if tool.name == "get_orders")
    jsonschema.validate(result.structured_content, schema)

    refused = seen.unknown_field
    assert refused.is_error
    assert text_of(refused).startswith(
        "invalid_argument: fields: 1 of the names given are not fields of these records, "
        "which have id, client_order_id"
    )
    assert "secret" not in text_of(refused)
    assert (refused.structured_content or {})["hint"] == "fields"

    done = run_in_process(
        svc_mcp_cli.main,
        ["get_orders", "--fields", "id,status", "--limit", "5"],
        stubs.mcp_variables(),
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == records


@pytest.fixture
def nowhere(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Both backends at a closed loopback port, for the in-process server to read."""
    with closed_url() as closed:
        monkeypatch.setenv("PORTAL_API_BASE", closed)
        monkeypatch.setenv("SERVICE_API_BASE", closed)
        yield


@pytest.mark.parametrize(
    ("tool", "arguments", "says", "hint"),
    [
        (
            "get_orders",
            {"status": "done"},
            "status must be one of open, new, partially_filled",
            "status",
        ),
        ("get_events", {"level": 3}, "level must be a string", "level"),
        ("get_fills", {"limit": 5000}, "limit must be from 1 to 1000, not 5000", "limit"),
        ("get_orders", {"fields": "id"}, "fields must be a list of names", "fields"),
        ("portal_sessions", {"page": 2}, "portal_sessions takes no argument page", "page"),
    ],
)
def test_bad_arguments_are_caught_before_any_request(
    tool: str, arguments: dict[str, object], says: str, hint: str, nowhere: None
) -> None:
    """Both backends point at a closed port: an error other than `unreachable` proves that
    nothing was sent."""
    result = asyncio.run(in_memory(lambda client: client.call_tool(tool, arguments)))
    assert result.is_error
    assert text_of(result).startswith(f"invalid_argument: {says}")
    assert result.structured_content == {
        "kind": "invalid_argument",
        "message": text_of(result).removeprefix("invalid_argument: "),
        "hint": hint,
    }


def test_an_unknown_tool_is_an_error_with_a_kind(nowhere: None) -> None:
    """Like every other failure: `<kind>: <message>` text and `{kind, message}`, and the name
    the caller sent is not echoed."""
    result = asyncio.run(in_memory(lambda client: client.call_tool("get_secret_thing", {})))
    assert result.is_error
    assert text_of(result) == "not_found: no tool of that name here; tools/list names them"
    assert result.structured_content == {
        "kind": "not_found",
        "message": "no tool of that name here; tools/list names them",
    }
