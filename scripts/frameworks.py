"""Checks that agent frameworks see svc-mcp's tools as meant, and that the MCP Inspector's
`--strict` schema portability report is empty.

1. Sets up `.venv-frameworks/`, an environment of its own with the framework versions pinned in
   scripts/frameworks/requirements.txt (the product's dependencies stay as they are), and runs
   scripts/frameworks/check.py there against a real `svc-mcp` stdio server whose backends are
   `svc-mcp demo`'s stubs: every tool through every converter, and the list tools called through
   smolagents', openai-agents' and langchain-mcp-adapters' tool-call paths (see that file).
2. Runs the pinned MCP Inspector CLI (`tools/list --strict`, from the npm registry) against the
   same server: 0 errors and 0 warnings, on input and output schemas alike.

Run: .venv/bin/uv run --locked --extra dev scripts/frameworks.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from svc_mcp.demo.stubs import running_stubs

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "scripts" / "frameworks"
FRAMEWORKS_ENV = ROOT / ".venv-frameworks"
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
BIN = Path(sys.executable).parent


def framework_python() -> Path:
    uv = shutil.which("uv", path=str(BIN)) or shutil.which("uv")
    if uv is None:
        sys.exit("uv is needed to set up the frameworks' environment")
    python = FRAMEWORKS_ENV / "bin" / "python"
    if not python.exists():
        subprocess.run([uv, "venv", "-q", "-p", sys.executable, str(FRAMEWORKS_ENV)], check=True)
    subprocess.run(
        [uv, "pip", "install", "-q", "-p", str(python), "-r", str(HERE / "requirements.txt")],
        check=True,
    )
    return python


def inspector_findings(server: str, variables: dict[str, str]) -> int:
    """The Inspector's schema findings for `tools/list` (errors and warnings), printed."""
    npx = shutil.which("npx")
    if npx is None:
        sys.exit("npx (node and npm) is needed for the MCP Inspector check")
    command = [npx, "-y", INSPECTOR, "--cli", server, "--method", "tools/list", "--strict"]
    done = subprocess.run(
        [*command, "--format", "json"],
        env={**os.environ, **variables},
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
        return 1
    report = json.loads(done.stdout)
    listed = len(report.get("result", {}).get("tools", []))
    if listed == 0:
        print("FAILED inspector: it listed no tools, so it checked nothing", file=sys.stderr)
        return 1
    findings = report.get("schemaFindings", [])
    for tool in findings:
        for finding in tool["findings"]:
            print(f"FAILED inspector: {tool['toolName']} {finding['path']}: {finding['issue']}")
    count = sum(len(tool["findings"]) for tool in findings)
    print(f"inspector --strict: {count} findings on {listed} tools listed")
    return count


QUIET = {
    # Nothing leaves this machine: the frameworks' own telemetry and trace exports stay off.
    "MCP_USE_ANONYMIZED_TELEMETRY": "false",
    "OPENAI_AGENTS_DISABLE_TRACING": "1",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGSMITH_TRACING": "false",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "FASTMCP_CHECK_FOR_UPDATES": "off",
    "DO_NOT_TRACK": "1",
}


def main() -> int:
    os.environ.update(QUIET)
    python = framework_python()
    server = str(BIN / "svc-mcp")
    with running_stubs() as stubs:
        variables = stubs.mcp_variables()
        checked = subprocess.run(
            [str(python), str(HERE / "check.py")],
            env={**os.environ, **variables, "SVC_MCP_COMMAND": server},
            timeout=600,
        )
        findings = inspector_findings(server, variables)
    return 1 if checked.returncode or findings else 0


if __name__ == "__main__":
    sys.exit(main())
