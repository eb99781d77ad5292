"""What a newcomer hit with `install` (issue 35, item 4): an entry that runs uv or uvx trusts the
system's certificates (a proxy that re-signs TLS), and an install with no backend set says so.
And one tool at a time (item 2): `install --tools/--exclude-tools` goes into the entry."""

from __future__ import annotations

import json

from tests.install.conftest import Home, RunCli
from tests.mcp.conftest import PortalStub

GITHUB = ("--source", "github", "--uvx", "/usr/local/bin/uvx")
BACKEND = ("--env", "SERVICE_API_BASE=http://127.0.0.1:8080")


def test_an_entry_that_runs_uvx_trusts_the_system_store(run_cli: RunCli) -> None:
    result = run_cli("install", "--client", "cursor", "--print", *GITHUB, *BACKEND)
    assert result.returncode == 0, result.stderr
    entry = json.loads(result.stdout)["mcpServers"]["svc"]
    assert entry["command"] == "/usr/local/bin/uvx"
    assert entry["env"]["UV_SYSTEM_CERTS"] == "1"


def test_an_entry_that_runs_its_own_script_sets_nothing_for_uv(run_cli: RunCli) -> None:
    result = run_cli("install", "--client", "cursor", "--print", *BACKEND)
    assert result.returncode == 0, result.stderr
    entry = json.loads(result.stdout)["mcpServers"]["svc"]
    assert entry["command"].endswith("svc-mcp") or entry["command"].endswith("/uv")
    if entry["command"].endswith("svc-mcp"):
        assert "UV_SYSTEM_CERTS" not in entry["env"]


def test_no_backend_set_is_said_in_one_line_naming_the_variables(run_cli: RunCli) -> None:
    result = run_cli("install", "--client", "cursor", "--print", *GITHUB)
    assert result.returncode == 0, result.stderr
    (line,) = [line for line in result.stderr.splitlines() if "no backend is set" in line]
    for name in ("SERVICE_API_BASE", "SERVICE_API_TOKEN", "PORTAL_API_BASE"):
        assert name in line
    assert "--env" in line


def test_a_backend_set_says_nothing_of_the_kind(run_cli: RunCli) -> None:
    result = run_cli("install", "--client", "cursor", "--print", *GITHUB, *BACKEND)
    assert "no backend is set" not in result.stderr


def test_install_passes_the_tool_selection_into_the_entry(
    fake_home: Home, run_cli: RunCli, portal: PortalStub
) -> None:
    backend = {"PORTAL_API_BASE": portal.base_url}
    done = run_cli(
        "install", "--client", "cursor", "--tools", "portal_page,portal_catalog", env=backend
    )
    assert done.returncode == 0, done.stderr
    entry = json.loads(fake_home.user_file("cursor").read_text())["mcpServers"]["svc"]
    assert entry["args"][-2:] == ["--tools", "portal_catalog,portal_page"]
    # Doctor still knows it for svc-mcp's entry, starts it, and it lists the two tools.
    doctor = run_cli("doctor", "--toolsets", "portal", "--json", env=backend)
    findings = {f["check"]: f for f in map(json.loads, doctor.stdout.splitlines())}
    assert findings["host.cursor.user"]["status"] == "ok", findings["host.cursor.user"]
    assert findings["host.cursor.user"]["tools"] == 2


def test_a_gateway_entry_carries_the_selection_as_a_header(run_cli: RunCli) -> None:
    done = run_cli(
        "install", "--client", "cursor", "--print", "--http", "http://127.0.0.1:8765/mcp",
        "--tools", "get_system,get_pnl", "--exclude-tools", "get_pnl",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    headers = json.loads(done.stdout)["mcpServers"]["svc"]["headers"]
    assert headers["X-MCP-Tools"] == "get_system"


def test_install_refuses_an_unknown_tool_name(run_cli: RunCli) -> None:
    done = run_cli("install", "--client", "cursor", "--print", "--tools", "get_sytem")
    assert done.returncode == 2
    assert "unknown tool get_sytem (did you mean get_system" in done.stderr
