"""What a newcomer hit with `install` (issue 35, item 4): an entry that runs uv or uvx trusts the
system's certificates (a proxy that re-signs TLS), and an install with no backend set says so."""

from __future__ import annotations

import json

from tests.install.conftest import RunCli

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
