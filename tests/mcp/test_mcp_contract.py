"""The contract (spec 1 section 1, DESIGN section 2): for every portal tool, the REST `data` of a
real `svc-stub portal`, the `svc-portal` JSON, the `svc-mcp <tool>` JSON and the MCP structured
result over a real stdio server and over the real `--http` gateway are the same value, for an
anonymous caller and for a human auditor; refusals agree too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from mcp import ClientSession
from mcp.types import CallToolResult, ListToolsResult, TextContent

from portal_tools.tools import ANYONE, AUDITOR, PORTAL_TOOLS
from svc_mcp.cli import main as svc_mcp_cli
from svc_mcp.cli import portal as svc_portal_cli
from svc_mcp.core.toolspec import ToolSpec
from svc_mcp.serve.untrusted import QUOTED_MARK, RULE, mark
from svc_mcp.tools.table import TOOLS
from tests.mcp.conftest import (
    SVC_MCP,
    SVC_PORTAL,
    CliRun,
    PortalStub,
    over_http,
    over_stdio,
    process_env,
    rest_default_page,
    run_commands,
    run_in_process,
)
from tests.support import PORT, running_server

CALLERS = ("anonymous", "auditor")
REQUEST_ID = re.compile(r" \(request id [0-9a-f]{16,32}\)$")
PAGING_TOOL = "portal_catalog"
"""Anyone may read it and the demo catalog is longer than two entries: both callers page it."""


def refused(spec: ToolSpec, caller: str) -> bool:
    return caller == "anonymous" and spec.access != ANYONE


CASES = [(spec, caller) for spec in PORTAL_TOOLS for caller in CALLERS]
ALLOWED = [case for case in CASES if not refused(*case)]
REFUSED = [case for case in CASES if refused(*case)]


def case_id(case: object) -> str:
    return case.name if isinstance(case, ToolSpec) else str(case)


@dataclass(frozen=True)
class McpView:
    tools: ListToolsResult
    results: dict[str, CallToolResult]
    first_page: CallToolResult
    second_page: CallToolResult


@dataclass(frozen=True)
class CallerView:
    rest: dict[str, httpx.Response]
    svc_portal: dict[str, CliRun]
    svc_mcp: dict[str, CliRun]
    stdio: McpView
    http: McpView


async def _use(session: ClientSession) -> McpView:
    await session.initialize()
    tools = await session.list_tools()
    results = {
        spec.name: await session.call_tool(spec.name, rest_default_page(spec))
        for spec in PORTAL_TOOLS
    }
    first = await session.call_tool(PAGING_TOOL, {"limit": 2})
    assert first.structured_content is not None
    cursor = first.structured_content["next_cursor"]
    second = await session.call_tool(PAGING_TOOL, {"limit": 2, "cursor": cursor})
    return McpView(tools, results, first, second)


@pytest.fixture(scope="module")
def views(
    portal: PortalStub, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, CallerView]]:
    logs = tmp_path_factory.mktemp("gateways")
    with contextlib.ExitStack() as stack:
        gateway_urls = {}
        for caller in CALLERS:
            server = stack.enter_context(
                running_server(
                    ["-m", "svc_mcp", "--http", "--no-auth", "--port", PORT],
                    log_path=Path(logs) / f"{caller}.log",
                    ready_path="/mcp",
                    env=process_env(portal.env(caller)),
                )
            )
            gateway_urls[caller] = server.base_url + "/mcp"
        result = {}
        for caller in CALLERS:
            rest = {
                spec.name: httpx.get(portal.base_url + spec.path, headers=portal.headers(caller))
                for spec in PORTAL_TOOLS
            }
            variables = portal.env(caller)
            svc_portal = {
                spec.name: run_in_process(svc_portal_cli.main, spec.cli, variables)
                for spec in PORTAL_TOOLS
            }
            svc_mcp = {
                spec.name: run_in_process(svc_mcp_cli.main, [spec.name], variables)
                for spec in PORTAL_TOOLS
            }
            stdio = asyncio.run(over_stdio(portal.env(caller), _use))
            http = asyncio.run(over_http(gateway_urls[caller], _use))
            result[caller] = CallerView(rest, svc_portal, svc_mcp, stdio, http)
        yield result


def expected_structured(envelope: dict[str, Any]) -> dict[str, Any]:
    data = envelope["data"]
    if isinstance(data, dict):
        return data
    cursor = {"next_cursor": envelope["next_cursor"]} if "next_cursor" in envelope else {}
    return {"result": data, **cursor}


@pytest.mark.parametrize(("spec", "caller"), ALLOWED, ids=case_id)
def test_every_client_sees_the_rest_data(
    views: dict[str, CallerView], spec: ToolSpec, caller: str
) -> None:
    view = views[caller]
    envelope = view.rest[spec.name].json()
    assert view.rest[spec.name].status_code == 200
    data = envelope["data"]
    assert data, "the demo data gives every allowed call something to show"
    cursor_line = f"next_cursor: {envelope['next_cursor']}\n" if "next_cursor" in envelope else ""
    for cli in (view.svc_portal[spec.name], view.svc_mcp[spec.name]):
        assert cli.returncode == 0, cli.stderr
        assert json.loads(cli.stdout) == data
        assert cli.stderr == cursor_line
    for mcp_view in (view.stdio, view.http):
        result = mcp_view.results[spec.name]
        assert not result.is_error
        # With the marker of text written by others first (svc_mcp.serve.untrusted).
        assert result.structured_content == mark(spec.name, expected_structured(envelope))


@pytest.mark.parametrize(("spec", "caller"), REFUSED, ids=case_id)
def test_every_client_refuses_alike(
    views: dict[str, CallerView], spec: ToolSpec, caller: str
) -> None:
    view = views[caller]
    response = view.rest[spec.name]
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "forbidden"
    role = "the auditor role with a human session" if spec.access == AUDITOR else "signed-in"
    svc_portal, svc_mcp = view.svc_portal[spec.name], view.svc_mcp[spec.name]
    for prog, cli in (("svc-portal", svc_portal), ("svc-mcp", svc_mcp)):
        assert cli.returncode == 4
        assert cli.stdout == ""
        assert cli.stderr.startswith(f"{prog}: forbidden: GET {spec.path} needs ")
        assert cli.stderr.count("\n") == 1
        assert role in cli.stderr
        assert "set PORTAL_SESSION_TOKEN" in cli.stderr
    # Alike but for the id of each one's request (docs/observability.md).
    message = REQUEST_ID.sub("", svc_mcp.stderr.removeprefix("svc-mcp: ").strip())
    for mcp_view in (view.stdio, view.http):
        result = mcp_view.results[spec.name]
        assert result.is_error
        [block] = result.content
        assert isinstance(block, TextContent)
        # It quotes the portal's words.
        assert REQUEST_ID.sub("", block.text) == message.removesuffix(")") + ")" + QUOTED_MARK
        said = result.structured_content["untrusted"]["said"]  # type: ignore[index]
        assert said.startswith("forbidden: ")
        assert result.structured_content == {
            "kind": "forbidden",
            "message": message.removeprefix("forbidden: "),
            "hint": spec.access,
            "untrusted": {"said": said, "rule": RULE},
        }


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_tools_list_declares_every_row(views: dict[str, CallerView], transport: str) -> None:
    listed = {tool.name: tool for tool in getattr(views["anonymous"], transport).tools.tools}
    assert list(listed) == [spec.name for spec in TOOLS]
    for spec in PORTAL_TOOLS:
        tool = listed[spec.name]
        assert tool.title == spec.title
        assert tool.description == spec.description
        assert tool.input_schema == spec.input_schema()
        assert tool.annotations is not None
        assert tool.annotations.model_dump(by_alias=True, exclude_none=True) == {
            "readOnlyHint": True,
            "openWorldHint": False,
        }
        assert tool.output_schema is not None
        assert tool.output_schema["type"] == "object"
        jsonschema.Draft202012Validator.check_schema(tool.output_schema)


@pytest.mark.parametrize("caller", CALLERS)
def test_results_conform_to_the_published_output_schemas(
    views: dict[str, CallerView], caller: str
) -> None:
    view = views[caller]
    schemas = {tool.name: tool.output_schema for tool in view.stdio.tools.tools}
    for name, result in view.stdio.results.items():
        if not result.is_error:
            jsonschema.validate(result.structured_content, schemas[name])


@pytest.mark.parametrize("caller", CALLERS)
def test_paging_is_the_rest_paging(
    views: dict[str, CallerView], portal: PortalStub, caller: str
) -> None:
    url = portal.base_url + "/api/catalog"
    headers = portal.headers(caller)
    first = httpx.get(url, params={"limit": 2}, headers=headers).json()
    second = httpx.get(
        url, params={"limit": 2, "cursor": first["next_cursor"]}, headers=headers
    ).json()
    for mcp_view in (views[caller].stdio, views[caller].http):
        assert mcp_view.first_page.structured_content == expected_structured(first)
        assert mcp_view.second_page.structured_content == expected_structured(second)
    cli_first, cli_second = run_commands(
        [
            ([SVC_MCP, PAGING_TOOL, "--limit", "2"], portal.env(caller)),
            (
                [SVC_PORTAL, "catalog", "list", "--limit", "2", "--cursor", first["next_cursor"]],
                portal.env(caller),
            ),
        ]
    )
    assert json.loads(cli_first.stdout) == first["data"]
    assert cli_first.stderr == f"next_cursor: {first['next_cursor']}\n"
    assert json.loads(cli_second.stdout) == second["data"]
