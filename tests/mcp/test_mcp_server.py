"""The server's own part of a call, in process with the official client: the arguments reach the
row as they were sent (the row's `Param`s check them, not the SDK), and a bug in a call is a tool
error that keeps its text in the server's log. The wire itself is test_mcp_wire_snapshot's."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import TextContent

from svc_mcp.core.client import new_http_client
from svc_mcp.core.toolspec import ToolSpec
from svc_mcp.serve import server
from svc_mcp.tools.table import TOOLS

CATALOG = next(spec for spec in TOOLS if spec.name == "portal_catalog")


async def call(name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    async with new_http_client() as http, Client(server.build_server(TOOLS, http)) as client:
        result = await client.call_tool(name, arguments)
    (content,) = result.content
    assert isinstance(content, TextContent)
    return bool(result.is_error), content.text


def test_arguments_reach_the_row_as_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    received: list[dict[str, object]] = []

    async def recording(
        spec: ToolSpec, arguments: dict[str, object], http: object, slot: object, **_: object
    ) -> Any:
        received.append(arguments)
        raise RuntimeError("stop here")

    monkeypatch.setattr(server, "call_tool", recording)
    anyio.run(call, CATALOG.name, {"limit": "5", "bogus": [1], "cursor": None})
    # Unknown names and wrong types pass through for the row to refuse in its own words; a null
    # is a left-out argument, which gets the agent's default.
    assert received == [{**CATALOG.agent_defaults(), "limit": "5", "bogus": [1]}]


def test_a_bug_is_a_tool_error_without_its_text(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(
        spec: ToolSpec, arguments: dict[str, object], http: object, slot: object, **_: object
    ) -> Any:
        raise RuntimeError("internal detail 7f3a")

    monkeypatch.setattr(server, "call_tool", broken)
    with caplog.at_level(logging.ERROR, logger="svc_mcp.serve.server"):
        is_error, text = anyio.run(call, CATALOG.name, {})
    assert (is_error, text) == (True, f"Error executing tool {CATALOG.name}")
    assert "internal detail 7f3a" in caplog.text  # for whoever reads the server's log


def test_an_unknown_tool_is_a_tool_error() -> None:
    assert anyio.run(call, "no_such_tool", {}) == (
        True,
        "not_found: no tool of that name here; tools/list names them",
    )
