"""The data service rows against a real `svc-stub service`: the contract (REST data = `svc-mcp <tool>`
JSON = MCP structured result over stdio and over the HTTP gateway), agent-facing errors, and the
absence of any control operation."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from mcp import ClientSession
from mcp.types import CallToolResult, ListToolsResult

from server_stub.intel.envelope import key_bytes, sign
from svc_mcp.cli import main as svc_mcp_cli
from svc_mcp.serve.schemas import output_schema
from svc_mcp.serve.untrusted import mark
from svc_mcp.tools.service import SERVICE_TOOLS
from tests.mcp.conftest import (
    INTEL_KEY,
    ServiceStub,
    over_http,
    over_stdio,
    process_env,
    rest_default_page,
    run_in_process,
    service_stub,
)
from tests.support import PORT, closed_url, running_server

READS = [spec for spec in SERVICE_TOOLS if spec.hints.read_only]


def signed_envelope(**fields: Any) -> dict[str, Any]:
    draft = {"source": "desk-7", "kind": "note", "body": {"symbol": "ABC", "view": "long"}}
    return sign(draft | fields, key_bytes(INTEL_KEY), datetime.now(UTC))


@dataclass(frozen=True)
class McpView:
    tools: ListToolsResult
    results: dict[str, CallToolResult]


async def _use(session: ClientSession) -> McpView:
    await session.initialize()
    tools = await session.list_tools()
    results = {
        spec.name: await session.call_tool(spec.name, rest_default_page(spec)) for spec in READS
    }
    return McpView(tools, results)


@pytest.fixture(scope="module")
def views(
    service: ServiceStub, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    with running_server(
        ["-m", "svc_mcp", "--http", "--no-auth", "--port", PORT],
        log_path=tmp_path_factory.mktemp("service-gateway") / "gateway.log",
        ready_path="/mcp",
        env=process_env(service.env()),
    ) as gateway:
        seeded = httpx.post(
            service.base_url + "/api/v1/intel", json=signed_envelope(), headers=service.headers()
        )
        assert seeded.status_code == 201, seeded.text
        rest = {
            spec.name: httpx.get(service.base_url + spec.path, headers=service.headers())
            for spec in READS
        }
        cli = {
            spec.name: run_in_process(svc_mcp_cli.main, [spec.name], service.env())
            for spec in READS
        }
        stdio = asyncio.run(over_stdio(service.env(), _use))
        http = asyncio.run(over_http(gateway.base_url + "/mcp", _use))
        yield {"rest": rest, "cli": cli, "stdio": stdio, "http": http}


def expected_structured(body: dict[str, Any]) -> dict[str, Any]:
    data = body["data"]
    if isinstance(data, dict):
        return data
    return {"result": data} | (
        {"next_cursor": body["next_cursor"]} if "next_cursor" in body else {}
    )


@pytest.mark.parametrize("spec", READS, ids=lambda spec: spec.name)
def test_rest_cli_and_mcp_agree(views: dict[str, Any], spec: Any) -> None:
    response = views["rest"][spec.name]
    assert response.status_code == 200
    body = response.json()
    assert body["data"], f"{spec.name}: the demo data must not be empty"
    cli = views["cli"][spec.name]
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout) == body["data"]
    for transport in ("stdio", "http"):
        result: CallToolResult = views[transport].results[spec.name]
        assert not result.is_error, result.content
        structured = result.structured_content or {}
        if str(structured.get("next_cursor")).startswith("part."):
            # Over 24,000 characters: cut short at a record boundary (tests/mcp/test_answers.py).
            given = structured["result"]
            assert 0 < len(given) < len(body["data"])
            assert given == body["data"][: len(given)]
        else:
            # With the marker of text written by others first (svc_mcp.serve.untrusted).
            assert structured == mark(spec.name, expected_structured(body))
        jsonschema.validate(result.structured_content, output_schema(spec))


def test_tools_list_carries_annotations_and_schemas(views: dict[str, Any]) -> None:
    listed = {tool.name: tool for tool in views["stdio"].tools.tools}
    for spec in SERVICE_TOOLS:
        tool = listed[spec.name]
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is spec.hints.read_only
        assert tool.output_schema is not None
    submit = listed["submit_intel"]
    assert submit.annotations is not None
    assert submit.annotations.read_only_hint is False
    assert submit.annotations.destructive_hint is False
    assert submit.annotations.idempotent_hint is True
    assert submit.input_schema["required"] == ["envelope"]


def test_no_tool_controls_the_daemon(views: dict[str, Any]) -> None:
    names = " ".join(tool.name for tool in views["stdio"].tools.tools)
    for word in ("pause", "resume", "flatten", "place", "cancel", "order_create", "secret"):
        assert word not in names
    writers = [
        tool.name for tool in views["stdio"].tools.tools if not tool.annotations.read_only_hint
    ]  # type: ignore[union-attr]
    assert writers == ["submit_intel"]


def test_read_only_drops_submit_intel() -> None:
    listed = run_in_process(svc_mcp_cli.main, ["tools", "--read-only", "--json"], {})
    names = [tool["name"] for tool in json.loads(listed.stdout)]
    assert "submit_intel" not in names
    assert "get_system" in names
    only_portal = run_in_process(svc_mcp_cli.main, ["tools", "--toolsets", "portal", "--json"], {})
    assert all(tool["name"].startswith("portal_") for tool in json.loads(only_portal.stdout))


def test_a_missing_token_names_the_variable(service: ServiceStub) -> None:
    result = run_in_process(svc_mcp_cli.main, ["get_system"], service.env(token=None))
    assert result.returncode == 3
    assert "SERVICE_API_TOKEN" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def wait_for_lines(path: Path, marker: str, count: int) -> str:
    """The log once it holds `count` lines with `marker` (the server may write a request's line
    just after the client has read the answer), or as it is after 10 s."""
    deadline = time.monotonic() + 10
    while True:
        text = path.read_text()
        if text.count(marker) >= count or time.monotonic() > deadline:
            return text
        time.sleep(0.05)


@pytest.mark.e2e
def test_a_wrong_token_locks_out_and_is_never_retried(tmp_path: Path) -> None:
    wrong = "wrong-token-" + "w" * 24
    with service_stub(tmp_path) as stub:
        codes = [
            run_in_process(svc_mcp_cli.main, ["get_positions"], stub.env(token=wrong)).returncode
            for _ in range(9)
        ]
        locked = run_in_process(svc_mcp_cli.main, ["get_system"], stub.env(token=wrong))
        log = wait_for_lines(stub.log_path, '"route":"/api/v1/', 10)
    assert codes[:7] == [3] * 7
    assert codes[7:] == [6, 6]
    assert locked.returncode == 6
    assert "retry after" in locked.stderr
    assert "not retried automatically" in locked.stderr
    assert wrong not in locked.stderr
    requests = [line for line in log.splitlines() if '"route":"/api/v1/' in line]
    assert len(requests) == 10, "each call sends exactly one request"


def test_an_unreachable_service_names_the_url() -> None:
    with closed_url() as base:
        result = run_in_process(svc_mcp_cli.main, ["get_system"], {"SERVICE_API_BASE": base})
        assert result.returncode == 8
        assert base in result.stderr
        assert "SERVICE_API_BASE" in result.stderr


def test_the_http_api_offers_no_control_operation(service: ServiceStub) -> None:
    for path in ("/api/v1/system", "/api/v1/orders", "/api/v1/positions", "/api/v1/risk"):
        for method in ("POST", "PUT", "PATCH", "DELETE"):
            response = httpx.request(method, service.base_url + path, headers=service.headers())
            assert response.status_code == 405
    for path in ("pause", "resume", "flatten", "orders/new", "admin/pause", "control"):
        for method in ("GET", "POST"):
            response = httpx.request(
                method, f"{service.base_url}/api/v1/{path}", headers=service.headers()
            )
            assert response.status_code in (404, 405)
    system = httpx.get(service.base_url + "/api/v1/system", headers=service.headers()).json()
    assert system["data"]["mode"] == "running"
