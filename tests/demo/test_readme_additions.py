"""The documented lines beyond the quick start run as printed: `svc-mcp` on PATH with `uv tool
install .` and `uvx --from .` (docs/cli.md), and the Python client for the gateway, MCP SDK 2.x
(docs/gateway.md). And the help points where the docs do: `submit_intel --help` names `svc-stub
intel sign`, `svc-mcp portal --help` names itself."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import PORT, ROOT, running_server
from tests.support_wheelhouse import wheelhouse

BIN = Path(sys.executable).parent
TOKEN = "svc-readme-gateway-token-8e1f5a3c7b9d2e4f"
CLI_PAGE = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
GATEWAY_PAGE = (ROOT / "docs" / "gateway.md").read_text(encoding="utf-8")


def block_after(text: str, lead: str, language: str) -> str:
    """The first fenced block of `language` after the paragraph starting with `lead`."""
    rest = text.split(f"\n{lead}", 1)[1]
    found = re.search(rf"^```{language}\n(.*?)^```$", rest, re.S | re.M)
    assert found is not None, lead
    return found.group(1)


@pytest.mark.e2e
def test_the_path_lines_run_as_printed(tmp_path: Path) -> None:
    lines = block_after(
        CLI_PAGE, "To put `svc-mcp`, `svc-portal` and `svc-stub` on your", "sh"
    ).splitlines()
    assert lines == [
        "UV_SYSTEM_CERTS=1 .venv/bin/uv tool install .",
        "UV_SYSTEM_CERTS=1 .venv/bin/uvx --from . svc-mcp --version",
    ]  # uv through a proxy that re-signs TLS, as the quick start
    tools = tmp_path / "bin"
    env = {
        **os.environ,
        "UV_TOOL_DIR": str(tmp_path / "tools"),
        "UV_TOOL_BIN_DIR": str(tools),
        # Tests reach nothing beyond loopback: uv resolves from this environment's own packages
        # alone, packed as wheels, the build backend among them (the dev extra holds it), and
        # this interpreter. Never from uv's cache: what it holds depends on which uv ran before
        # (a fresh HOME's cache had no hatchling until another test's online build fetched it).
        "UV_OFFLINE": "1",
        "UV_NO_INDEX": "1",
        "UV_FIND_LINKS": str(wheelhouse(tmp_path / "wheels")),
        "UV_PYTHON": sys.executable,
    }
    for line in lines:
        done = subprocess.run(
            ["/bin/sh", "-c", line], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, (line, done.stderr)
    assert done.stdout.startswith("svc-mcp ")
    for name in ("svc-mcp", "svc-portal", "svc-stub"):
        helped = subprocess.run(
            [str(tools / name), "--help"], capture_output=True, text=True, timeout=60
        )
        assert helped.returncode == 0, (name, helped.stderr)


@pytest.mark.e2e
def test_the_python_client_for_the_gateway_runs_as_printed(tmp_path: Path) -> None:
    client = tmp_path / "client.py"
    client.write_text(block_after(GATEWAY_PAGE, "From Python, with the MCP SDK 2.x", "python"))
    db = tmp_path / "service.db"
    subprocess.run([str(BIN / "svc-stub"), "demo-data", "service", "--db", str(db)], check=True)
    with (
        running_server(
            ["-m", "server_stub", "service", "--db", str(db), "--port", PORT],
            log_path=tmp_path / "service.log",
            ready_path="/health/live",
            env={"SERVICE_API_TOKEN": ""},
        ) as service,
        running_server(
            ["-m", "svc_mcp", "--http", "--port", PORT],
            log_path=tmp_path / "gateway.log",
            ready_path="/mcp",
            env={"SVC_MCP_GATEWAY_TOKEN": TOKEN, "SERVICE_API_BASE": service.base_url},
        ) as gateway,
    ):
        done = subprocess.run(
            [sys.executable, str(client), f"{gateway.base_url}/mcp"],
            env={**os.environ, "SVC_MCP_GATEWAY_TOKEN": TOKEN},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    assert "'mode': 'running'" in done.stdout


@pytest.mark.e2e
def test_the_help_points_where_the_docs_do() -> None:
    intel = subprocess.run(
        [str(BIN / "svc-mcp"), "submit_intel", "--help"], capture_output=True, text=True
    )
    assert "svc-stub intel sign --file draft.json" in intel.stdout
    portal = subprocess.run(
        [str(BIN / "svc-mcp"), "portal", "--help"], capture_output=True, text=True
    )
    assert "svc-mcp portal" in portal.stdout
    assert "svc-portal" not in portal.stdout
