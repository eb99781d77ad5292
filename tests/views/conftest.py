"""What the view tests share: the demo stubs, a real gateway in front of them, and the Node tools
(the MCP Inspector's CLI, the reference MCP Apps host bridge) installed from the pinned lock file
into a temporary directory."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from svc_mcp.demo.stubs import DemoStubs, running_stubs
from tests import parallel
from tests.e2e import e2e_fixture
from tests.mcp.conftest import process_env
from tests.support import PORT, running_server
from tests.support_npm import npm as run_npm

HERE = Path(__file__).parent
APPS = {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}
"""What a client that renders MCP Apps declares (the extension with the app MIME type)."""
GATEWAY_TOKEN = "views-gateway-token-for-the-tests-0123"
VIEW_TOOLS = frozenset({"get_positions", "get_pnl", "get_risk"})


@e2e_fixture(scope="session")
def stubs() -> Iterator[DemoStubs]:
    with running_stubs() as started:
        yield started


@e2e_fixture(scope="session")
def gateway_url(stubs: DemoStubs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("views-gateway") / "gateway.log"
    with running_server(
        ["-m", "svc_mcp", "--http", "--port", PORT],
        log_path=log,
        ready_path="/mcp",
        env=process_env({**stubs.mcp_variables(), "SVC_MCP_GATEWAY_TOKEN": GATEWAY_TOKEN}),
    ) as server:
        yield server.base_url + "/mcp"


@e2e_fixture(scope="session")
def node_tools(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with the pinned Node packages and `bridge.js`, the reference host bridge
    (`@modelcontextprotocol/ext-apps/app-bridge`) bundled for a browser page."""
    npm, npx = shutil.which("npm"), shutil.which("npx")
    if npm is None or npx is None:
        pytest.fail("the view tests need node and npm (.ci/run --deps-only installs them)")

    def install(root: Path) -> None:
        for name in ("package.json", "package-lock.json"):
            shutil.copy(HERE / name, root / name)
        quiet = ["--no-audit", "--no-fund", "--loglevel=error", "--ignore-scripts"]
        run_npm("ci", *quiet, cwd=root, timeout=600)
        (root / "bridge-entry.mjs").write_text(
            'import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";\n'
            "window.McpApps = { AppBridge, PostMessageTransport };\n"
        )
        bundle = [npx, "--no-install", "rolldown", "bridge-entry.mjs", "--platform", "browser"]
        subprocess.run(
            [*bundle, "--format", "iife", "-o", "bridge.js"],
            cwd=root,
            check=True,
            timeout=300,
            capture_output=True,
        )

    return parallel.fill_once(parallel.run_folder("views-node", tmp_path_factory), install)


def without_ui(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool as listed for a client without MCP Apps: no `_meta.ui` link."""
    return {key: value for key, value in tool.items() if key != "_meta"}
