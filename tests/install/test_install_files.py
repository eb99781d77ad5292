"""`install/` holds, per client, exactly what `svc-mcp install --print` produces for fixed inputs
(install/README.md shows the command)."""

from __future__ import annotations

import json
import tomllib

import pytest

from svc_mcp.hosts.table import HOSTS
from tests.install.conftest import HOST_NAMES, RunCli
from tests.support import ROOT

INSTALL = ROOT / "install"
FIXED_INPUTS = (
    "--print",
    "--source",
    "github",
    "--uvx",
    "/usr/local/bin/uvx",
    "--env",
    "SERVICE_API_BASE=http://127.0.0.1:8080",
    "--env",
    "SERVICE_API_TOKEN=<your service token>",
    "--env",
    "PORTAL_API_BASE=http://127.0.0.1:8081",
    "--env",
    "PORTAL_SESSION_TOKEN=<your portal session token>",
)


def file_name(client: str) -> str:
    return f"{client}.{HOSTS[client].suffix}"


@pytest.mark.parametrize("client", HOST_NAMES)
def test_each_file_is_what_print_produces(client: str, run_cli: RunCli) -> None:
    result = run_cli("install", "--client", client, *FIXED_INPUTS)
    assert result.returncode == 0, result.stderr
    assert (INSTALL / file_name(client)).read_text(encoding="utf-8") == result.stdout


def test_the_folder_holds_one_file_per_client_and_the_readme() -> None:
    names = {path.name for path in INSTALL.iterdir()}
    assert names == {file_name(client) for client in HOST_NAMES} | {"README.md"}
    readme = (INSTALL / "README.md").read_text(encoding="utf-8")
    for client in HOST_NAMES:
        assert f"`{file_name(client)}`" in readme
    for argument in FIXED_INPUTS:
        assert argument in readme


GATEWAY = "http://127.0.0.1:8765/mcp"


@pytest.mark.parametrize("client", [c for c in HOST_NAMES if HOSTS[c].url_key])
def test_the_readme_shows_each_hosts_remote_form(client: str, run_cli: RunCli) -> None:
    """install/README.md's `--http` table row for the client names every key and value that
    `--http URL --print` writes (the URL written as URL)."""
    result = run_cli("install", "--client", client, "--http", GATEWAY, "--print")
    assert result.returncode == 0, result.stderr
    rows = [
        line
        for line in (INSTALL / "README.md").read_text(encoding="utf-8").splitlines()
        if line.startswith(f"| `{client}` | ") and "URL" in line
    ]
    assert len(rows) == 1, rows
    if HOSTS[client].file_format == "toml":
        entry = tomllib.loads(result.stdout)["mcp_servers"]["svc"]
        pairs = [f"{key} = {json.dumps(value)}" for key, value in entry.items()]
    else:
        entry = json.loads(result.stdout)[HOSTS[client].servers_key]["svc"]
        pairs = [f'"{key}": {json.dumps(value)}' for key, value in entry.items()]
    for pair in pairs:
        assert pair.replace(f'"{GATEWAY}"', "URL") in rows[0], pair


def test_the_readme_refuses_claude_desktop_remote_as_install_does(run_cli: RunCli) -> None:
    result = run_cli("install", "--client", "claude-desktop", "--http", GATEWAY, "--print")
    assert result.returncode == 2
    readme = (INSTALL / "README.md").read_text(encoding="utf-8")
    assert "| `claude-desktop` | refused: Claude Desktop's file takes local commands only" in readme
