"""The MCP Inspector's CLI (`--app-info`) reports every view tool as having an app with no
connect or resource domain, over stdio and through the gateway; without `--advertise-apps` (a
client that does not render apps) no tool has one."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from svc_mcp.demo.stubs import DemoStubs
from tests.mcp.conftest import SVC_MCP, process_env
from tests.support import ROOT
from tests.views.conftest import GATEWAY_TOKEN, VIEW_TOOLS


def app_info(node_tools: Path, *target: str, env: dict[str, str] | None = None) -> list[Any]:
    inspector = node_tools / "node_modules" / ".bin" / "mcp-inspector"
    command = [str(inspector), "--cli", *target, "--method", "tools/list", "--app-info"]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=120, env=env, check=False
    )
    assert done.returncode in (0, 2), done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def stdio_target(stubs: DemoStubs) -> list[str]:
    variables = [f"{name}={value}" for name, value in stubs.mcp_variables().items()]
    return [arg for pair in variables for arg in ("-e", pair)] + [SVC_MCP]


def assert_apps(report: list[Any]) -> None:
    apps = {line["toolName"]: line for line in report if line["hasApp"]}
    assert set(apps) == VIEW_TOOLS
    assert len(report) > len(apps)
    for name, line in apps.items():
        assert line["resourceUri"] == f"ui://svc-mcp/{name}"
        assert line["resourceMimeType"] == "text/html;profile=mcp-app"
        assert line["csp"] == {"connectDomains": [], "resourceDomains": []}
        assert "resourceError" not in line


def test_over_stdio(node_tools: Path, stubs: DemoStubs) -> None:
    assert_apps(app_info(node_tools, *stdio_target(stubs), "--advertise-apps"))


def test_without_apps_advertised_no_tool_has_one(node_tools: Path, stubs: DemoStubs) -> None:
    report = app_info(node_tools, *stdio_target(stubs))
    assert report
    assert not any(line["hasApp"] for line in report)


@pytest.mark.parametrize("era", ["modern"])
def test_through_the_gateway(node_tools: Path, gateway_url: str, era: str) -> None:
    """In the 2026-07-28 era: the stateless gateway learns the client's capabilities from each
    request (in the initialize era they live in a session it does not keep)."""
    target = [
        "--server-url",
        gateway_url,
        "--transport",
        "http",
        "--protocol-era",
        era,
        "--header",
        f"Authorization: Bearer {GATEWAY_TOKEN}",
        "--advertise-apps",
    ]
    assert_apps(app_info(node_tools, *target, env=process_env({})))


def test_the_gateway_pages_inspector_line_runs_as_printed(
    node_tools: Path, gateway_url: str
) -> None:
    """docs/gateway.md's Inspector command, with the version CI pins (tests/views/package.json),
    lists the tools through a real gateway; only the URL and the npx prefix are this test's."""
    page = (ROOT / "docs" / "gateway.md").read_text(encoding="utf-8")
    block = page.split("With the MCP Inspector's command line", 1)[1].split("```sh\n", 1)[1]
    line = block.split("\n```", 1)[0].replace("\\\n", " ")
    pinned = json.loads((ROOT / "tests" / "views" / "package.json").read_text())
    version = pinned["dependencies"]["@modelcontextprotocol/inspector"]
    prefix = f"npx -y @modelcontextprotocol/inspector@{version} "
    assert line.startswith(prefix), "the page names the version CI runs"
    inspector = node_tools / "node_modules" / ".bin" / "mcp-inspector"
    args = shlex.split(line.removeprefix(prefix).replace("$SVC_MCP_GATEWAY_TOKEN", GATEWAY_TOKEN))
    args[args.index("http://127.0.0.1:8765/mcp")] = gateway_url
    done = subprocess.run(
        [str(inspector), *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["tools"]) > 20
