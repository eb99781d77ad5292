"""A confined `svc-mcp` answers every tool through the official client while a file in HOME is
unreadable to it: over stdio, and as two gateways behind a round-robin proxy. The servers run as
hosts run them (tests/confinement/canary_server.py adds one read of the canary right after the
confinement); with SVC_MCP_CONFINEMENT=off the canary is read and these tests fail."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from svc_mcp.tools.table import TOOLS
from tests.mcp.conftest import PortalStub, ServiceStub, process_env
from tests.mcp.test_service_tools import signed_envelope
from tests.support import PORT, ROOT, running_server

pytestmark = pytest.mark.e2e

SERVER = ["-m", "tests.confinement.canary_server"]
GATEWAY_TOKEN = "confined-gateway-token-0123456789abcdef"


def arguments(name: str) -> dict[str, Any]:
    return {"envelope": signed_envelope()} if name == "submit_intel" else {}


def assert_every_tool_answered(results: dict[str, CallToolResult]) -> None:
    assert set(results) == {spec.name for spec in TOOLS}
    failed = {name: result.content for name, result in results.items() if result.is_error}
    assert failed == {}


def home_with_canary(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    (home / "canary").write_text("the user's own file")
    return {"HOME": str(home), "SVC_TEST_CANARY": str(home / "canary"), "PYTHONPATH": str(ROOT)}


def variables(portal: PortalStub, service: ServiceStub, tmp_path: Path) -> dict[str, str]:
    return {**portal.env("auditor"), **service.env(), **home_with_canary(tmp_path)}


async def call_every_tool_over_stdio(env: dict[str, str], errlog: Path) -> dict[str, Any]:
    server = StdioServerParameters(command=sys.executable, args=SERVER, env=env, cwd=str(ROOT))
    with errlog.open("w") as log:
        async with (
            stdio_client(server, errlog=log) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = await session.list_tools()
            return {
                tool.name: await session.call_tool(tool.name, arguments(tool.name))
                for tool in listed.tools
            }


def test_a_confined_stdio_server_answers_every_tool_and_cannot_read_home(
    portal: PortalStub, service: ServiceStub, tmp_path: Path
) -> None:
    errlog = tmp_path / "stderr.log"
    env = process_env(variables(portal, service, tmp_path))
    results = asyncio.run(call_every_tool_over_stdio(env, errlog))
    assert_every_tool_answered(results)
    log = errlog.read_text()
    assert "svc-mcp: confined (Landlock ABI" in log
    assert "canary: EACCES" in log


@pytest.fixture
def balanced_url(portal: PortalStub, service: ServiceStub, tmp_path: Path) -> Iterator[str]:
    env = process_env(
        {**variables(portal, service, tmp_path), "SVC_MCP_GATEWAY_TOKEN": GATEWAY_TOKEN}
    )
    with ExitStack() as stack:
        upstreams = []
        for index in range(2):
            gateway = stack.enter_context(
                running_server(
                    [*SERVER, "--http", "--port", PORT],
                    log_path=tmp_path / f"gateway-{index}.log",
                    ready_path="/mcp",
                    env=env,
                )
            )
            upstreams.append(gateway.base_url)
        proxy = stack.enter_context(
            running_server(
                ["-m", "tests.mcp.round_robin", PORT, *upstreams],
                log_path=tmp_path / "proxy.log",
                ready_path="/_proxy/counts",
                env={"PYTHONPATH": str(ROOT)},
            )
        )
        yield proxy.base_url + "/mcp"


async def call_every_tool_over_http(url: str) -> dict[str, CallToolResult]:
    headers = {"Authorization": f"Bearer {GATEWAY_TOKEN}"}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        listed = await client.list_tools()
        return {
            tool.name: await client.call_tool(tool.name, arguments(tool.name))
            for tool in listed.tools
        }


def test_confined_gateways_behind_a_proxy_answer_every_tool_and_cannot_read_home(
    balanced_url: str, tmp_path: Path
) -> None:
    results = asyncio.run(call_every_tool_over_http(balanced_url))
    assert_every_tool_answered(results)
    for index in range(2):
        log = (tmp_path / f"gateway-{index}.log").read_text()
        assert "svc-mcp --http: confined (Landlock ABI" in log
        assert "canary: EACCES" in log
