"""`svc-mcp` over stdio (official MCP client) when a backend is down, slow or answering garbage,
and when the host closes stdin in the middle of a call."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import time
from collections.abc import Iterator, Sequence

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent

from svc_mcp.core.backends import PORTAL
from tests.hardening.conftest import wait_for
from tests.hardening.fake_backend import ARRIVALS, BODIES, SLOW_SECONDS, fake_backend
from tests.mcp.conftest import SERVICE_TOKEN, SVC_MCP, process_env
from tests.support import closed_url

pytestmark = pytest.mark.e2e

CLIENT_TIMEOUT = "0.5"
"""The slow backend's test: its bound is that test's subject."""
CALM_TIMEOUT = "30"
"""Every other test's: a loaded machine's late answer must not turn its subject into a timeout
(a garbage answer was once `unreachable (no answer within 0.5 s)` with seven servers starting)."""


@pytest.fixture(scope="module")
def backend() -> Iterator[str]:
    with fake_backend() as base_url:
        yield base_url


async def call_each(
    base_url: str, tools: Sequence[str], client_timeout: str = CALM_TIMEOUT
) -> list[tuple[CallToolResult, float]]:
    """Each tool called in turn by one fresh svc-mcp whose backends are at `base_url`; each result
    and its duration."""
    env = process_env(
        {
            "SERVICE_API_BASE": base_url,
            "SERVICE_API_TOKEN": SERVICE_TOKEN,
            "PORTAL_API_BASE": base_url,
            "SVC_MCP_TIMEOUT_SECONDS": client_timeout,
        }
    )
    server = StdioServerParameters(command=SVC_MCP, env=env)
    answers = []
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for tool in tools:
            started = time.monotonic()
            result = await session.call_tool(tool, {})
            answers.append((result, time.monotonic() - started))
        # The server is still alive and answering after the failures.
        assert (await session.list_tools()).tools
    return answers


async def call(
    base_url: str, tool: str = "get_system", client_timeout: str = CALM_TIMEOUT
) -> tuple[CallToolResult, float]:
    (answer,) = await call_each(base_url, [tool], client_timeout)
    return answer


def text(result: CallToolResult) -> str:
    """The error's text, after checking that its structured content says the same."""
    assert result.is_error, result
    content = result.content[0]
    assert isinstance(content, TextContent)
    structured = result.structured_content or {}
    # The text adds the id of a backend request that failed (docs/observability.md).
    told = re.sub(r" \(request id [0-9a-f]{16,32}\)$", "", content.text)
    assert told == f"{structured['kind']}: {structured['message']}"
    return content.text


def test_backend_down_is_an_unreachable_tool_error() -> None:
    with closed_url() as base_url:  # nothing listens there
        (service, _), (portal, _) = asyncio.run(
            call_each(base_url, ["get_system", "portal_catalog"])
        )
        assert text(service).startswith("unreachable: cannot reach the data service at " + base_url)
        assert "SERVICE_API_BASE sets the address" in text(service)
        assert text(portal).startswith("unreachable: cannot reach the portal at " + base_url)


def test_slow_backend_is_bounded_by_the_client_timeout(backend: str) -> None:
    async def both() -> list[tuple[CallToolResult, float]]:
        return await asyncio.gather(
            call(f"{backend}/slow", client_timeout=CLIENT_TIMEOUT),
            call(f"{backend}/trickle", client_timeout=CLIENT_TIMEOUT),
        )

    for result, took in asyncio.run(both()):
        assert f"no answer within {CLIENT_TIMEOUT} s" in text(result)
        assert text(result).startswith("unreachable: ")
        assert took < float(CLIENT_TIMEOUT) + 1.0 < SLOW_SECONDS


def test_garbage_answers_are_server_errors(backend: str) -> None:
    tools = ["get_system", "portal_catalog"]

    async def every_mode() -> list[list[tuple[CallToolResult, float]]]:
        return await asyncio.gather(*(call_each(f"{backend}/{mode}", tools) for mode in BODIES))

    for mode, answers in zip(BODIES, asyncio.run(every_mode()), strict=True):
        for tool, (result, _) in zip(tools, answers, strict=True):
            said = text(result)
            assert said.startswith("server_error: "), (mode, tool, said)
            assert "Traceback" not in said
            expected = "HTTP 500" if mode == "html-500" else "without the documented envelope"
            assert expected in said, (mode, tool, said)


def test_an_answer_too_large_is_refused_on_its_content_length(backend: str) -> None:
    """Refused at once from its headers (issue 33, finding 7): nothing of it is read or kept."""
    env = {"SVC_MCP_TIMEOUT_SECONDS": "30", "PORTAL_API_BASE": f"{backend}/huge"}
    started = time.monotonic()
    done = subprocess.run(
        [SVC_MCP, "portal_catalog"], capture_output=True, text=True, env=process_env(env)
    )
    took_cli = time.monotonic() - started
    result, took_mcp = asyncio.run(call(f"{backend}/huge", "portal_catalog"))
    for said, took in ((done.stderr, took_cli), (text(result), took_mcp)):
        assert "server_error: " in said
        cap = PORTAL.max_answer_bytes / (1024 * 1024)
        assert f"with more than {cap:g} MiB; refused (too large" in said, said
        assert took < SLOW_SECONDS - 1, said


def message(payload: dict[str, object]) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", **payload}) + "\n").encode()


def test_stdin_closed_mid_call_exits_cleanly(backend: str) -> None:
    """The host closes stdin while a call waits on a slow backend: the call is answered when the
    backend answers (here with a payload that fails its check), then exit 0, quietly."""
    env = process_env(
        {
            "SERVICE_API_BASE": f"{backend}/slow",
            "SERVICE_API_TOKEN": SERVICE_TOKEN,
            "SVC_MCP_TIMEOUT_SECONDS": "30",
        }
    )
    process = subprocess.Popen(
        [SVC_MCP],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "hardening", "version": "0"},
    }
    process.stdin.write(message({"id": 1, "method": "initialize", "params": init}))
    process.stdin.flush()
    assert json.loads(process.stdout.readline())["id"] == 1
    arrived = ARRIVALS["slow"]
    process.stdin.write(message({"method": "notifications/initialized"}))
    call_params = {"name": "get_system", "arguments": {}}
    process.stdin.write(message({"id": 2, "method": "tools/call", "params": call_params}))
    process.stdin.flush()
    wait_for(lambda: ARRIVALS["slow"] > arrived)  # the call now waits on the slow backend
    started = time.monotonic()
    process.stdin.close()
    try:
        code = process.wait(timeout=SLOW_SECONDS + 5)
    finally:
        process.kill()
    took = time.monotonic() - started
    stderr = process.stderr.read().decode() if process.stderr else ""
    answer = json.loads(process.stdout.readline())
    assert answer["id"] == 2
    assert answer["result"]["structuredContent"]["kind"] == "server_error"
    assert code == 0, stderr
    assert took < SLOW_SECONDS + 3
    assert "Traceback" not in stderr, stderr
    assert "Error" not in stderr, stderr
